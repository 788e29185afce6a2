"""A long proof ordered by a deep estimate: Kalah(6,N) empty capture from the start.

    python benchmarks/deep_estimate.py [--seeds 5] [--depth 26] [--egdb /work/egdb/always-24.egdb]
                                       [--only deep|default]

Proves the value with one thread twice, each from an empty 256 MiB table:

- ``default``: what ``Engine.analyse(prove="value")`` does (a cheap estimate, then MTD(f));
- ``deep``: a full-window heuristic deepening to ``--depth`` sowings in steps of 3 first (the
  published solver deepens to 29 before its full-depth MTD(f)), MTD(f) from its value, and the
  exact search trying heuristic entries' moves first (``Searcher.heuristic_moves``).

It prints each run's value, time and nodes, and the ratio. Kalah(6,5) takes minutes per run.
"""

from __future__ import annotations

import argparse
import time

from kalah_core import Position, Rules
from kalah_core.egdb import EndgameDatabase
from kalah_core.solver import Engine

TT_MB = 256


def deep(
    position: Position, rules: Rules, database: EndgameDatabase, depth: int
) -> tuple[int, int]:
    engine = Engine(TT_MB, [database])
    s = engine.searcher
    s.heuristic_moves = True
    s.begin(position, rules)
    estimate = 0
    for d in range(depth % 3 + 3, depth + 1, 3):
        estimate, nodes, _, _ = s.heuristic(position, rules, d, fresh=False)
        print(f"  depth {d:2}: estimate {estimate:+d}, {nodes:,} nodes", flush=True)
    bound = sum(position.south) + sum(position.north)
    lower, upper, _, _ = s.mtdf(position, rules, estimate, -bound, bound, fresh=False)
    assert lower == upper
    return lower, s.nodes


def default(position: Position, rules: Rules, database: EndgameDatabase) -> tuple[int, int]:
    analysis = Engine(TT_MB, [database]).analyse(position, rules, prove="value", pv_limit=1)
    assert analysis.exact
    return analysis.value, analysis.nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--depth", type=int, default=26)
    parser.add_argument("--egdb", default="/work/egdb/always-24.egdb")
    parser.add_argument("--only", choices=("deep", "default"))
    args = parser.parse_args()
    rules = Rules(houses=6, seeds=args.seeds, capture="always")
    database = EndgameDatabase.open(args.egdb, rules)
    database.verify()  # reads every page: no run pays for first touches
    position = Position.start(rules)
    seconds: dict[str, float] = {}
    for name in ("deep", "default"):
        if args.only not in (None, name):
            continue
        started = time.perf_counter()
        if name == "deep":
            value, nodes = deep(position, rules, database, args.depth)
        else:
            value, nodes = default(position, rules, database)
        seconds[name] = time.perf_counter() - started
        print(f"{name:8} value {value:+d}  {seconds[name]:7.1f} s  {nodes:,} nodes", flush=True)
    if len(seconds) == 2:
        print(f"deep against default: {seconds['default'] / seconds['deep']:.2f}x")


if __name__ == "__main__":
    main()
