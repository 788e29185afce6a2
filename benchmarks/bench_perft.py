"""Sowings per second in perft: the compiled engine against the plain-Python reference.

Both run in this one process, pinned to one core where the OS allows, from the start of the
``kalah`` preset. Neither perft counts leaves in bulk: ``perft(d)`` plays every move down to
the leaves, so it costs ``perft(1) + ... + perft(d)`` sowings; the rate is that number over
the wall time. Each figure is the median of several repetitions. Run from the repository
root::

    python benchmarks/bench_perft.py [--engine-depth 10] [--reference-depth 6] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

from kalah_core import PRESETS, Position, Rules, perft
from kalah_core import reference as ref


def sowings(start: Position, depth: int) -> int:
    """Moves played by a perft of ``depth``: every node below the root."""
    rules = PRESETS["kalah"]
    return sum(perft(start, rules, d) for d in range(1, depth + 1))


def measure(run: Callable[[], int], expected: int, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - began)
        if result != expected:
            raise SystemExit(f"perft gave {result}, expected {expected}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-depth", type=int, default=10)
    parser.add_argument("--reference-depth", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rules = PRESETS["kalah"]
    start = Position.start(rules)
    rows = []
    engines: list[tuple[str, int, Callable[[Position, Rules, int], int]]] = [
        ("cython", args.engine_depth, perft),
        ("reference", args.reference_depth, ref.perft),
    ]
    for label, depth, count in engines:
        count(start, rules, 1)  # warm up (imports, caches)
        leaves = perft(start, rules, depth)
        played = sowings(start, depth)
        times = measure(partial(count, start, rules, depth), leaves, args.repeat)
        median = statistics.median(times)
        rows.append((label, depth, leaves, played, median, played / median, times))

    print(f"perft from the start of 'kalah' ({start}); median of {args.repeat} runs, one core")
    print(f"{'engine':<10} {'depth':>5} {'leaves':>13} {'sowings':>13}", end=" ")
    print(f"{'median s':>9} {'sowings/s':>14}")
    for label, depth, leaves, played, median, rate, times in rows:
        print(f"{label:<10} {depth:>5} {leaves:>13,} {played:>13,} {median:>9.4f} {rate:>14,.0f}")
        print(f"{'':<10} runs: {', '.join(f'{t:.4f}' for t in times)} s")
    ratio = rows[0][5] / rows[1][5]
    print(f"ratio cython / reference: {ratio:,.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
