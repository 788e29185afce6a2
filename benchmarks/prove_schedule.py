"""``kalah prove``'s schedule on W workers timed in nodes, not seconds: its speed-up on an idle
machine, whatever the load of this one.

The proof runs on :class:`kalah_core.tasks.ClockExecutor`: W workers that each search one
node a tick. A test submitted to a free worker at tick t ends at t + its nodes (a cancelled
one frees its worker at the tick of the cancel); the results come in the order of their
ticks, exactly as W real workers of equal speed would answer. Each test is searched for real,
once, in this process (a test's outcome is a pure function of it, so the runs of every W share
them), and the proof's deciding tests are the real one-process ones. The figure is the last
tick (the makespan in nodes): W=1's is the one-process run's nodes; the ratio to it is the
speed-up the schedule allows with W cores to itself. It leaves out what costs no nodes (spawning,
pipes, Redis: milliseconds a test; see bench_prove.py for wall times). It times the cold proof
(``kalah prove --cold``: each test on an emptied table): the clock's workers share this
process, so they could not keep a table each.

    nice -n 5 python benchmarks/prove_schedule.py --houses 6 --seeds 4 --workers 1,2,3,4
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from kalah_core.deepbook_refine import RefineBudget
from kalah_core.position import Position
from kalah_core.prove import prove_position
from kalah_core.rules import Rules
from kalah_core.tasks import ClockExecutor


class Quiet:
    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--houses", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--capture", default="nonempty")
    parser.add_argument("--workers", default="1,2,3,4")
    parser.add_argument("--first-mnodes", type=float, default=1.0)
    parser.add_argument("--tt-mb", type=int, default=256)
    parser.add_argument("--egdb", action="append", default=[])
    args = parser.parse_args()
    rules = Rules(houses=args.houses, seeds=args.seeds, capture=args.capture)
    budget = RefineBudget(int(args.first_mnodes * 1e6), None, args.tt_mb, tuple(args.egdb))
    print(f"uptime before: {os.popen('uptime').read().strip()}")
    print(f"{rules.key} from the start, first cap {budget.first_nodes:,}, {args.tt_mb} MiB")
    known: dict[str, Any] = {}
    base = None
    for w in [int(x) for x in args.workers.split(",")]:
        executor = ClockExecutor(w, lambda result: int(result[1]), known)
        started = time.process_time()
        proof = prove_position(
            rules, Position.start(rules), budget, stream=Quiet(), executor=executor, warm=False
        )
        session = executor.last
        assert session is not None
        base = base or session.now
        print(
            f"workers {w}: [{proof.lower:+d}, {proof.upper:+d}] in {proof.tests} tests, "
            f"{proof.nodes:,} nodes; makespan {session.now:,} nodes ({base / session.now:.2f}x), "
            f"{session.spent:,} searched ({session.spent / proof.nodes:.2f} of the "
            f"proof's); {time.process_time() - started:.0f} s CPU here",
            flush=True,
        )
    print(f"uptime after: {os.popen('uptime').read().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
