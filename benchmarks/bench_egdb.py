"""Endgame database: build time, file size and lookups per second, for each N given.

Builds the database of the ``kalah`` rules (6 houses; shared by every rule set with the same
capture, end and remaining) for each N, one run each, on ``--threads`` threads (default every
core this process may use), into ``--dir`` (default /tmp, never the repository), then opens
it memory-mapped and measures

- compiled probes per second (``egdb_probe`` on pseudo-random boards, the search's path),
- Python ``EndgameDatabase.lookup`` calls per second (the API's path, Position objects).

The load average before each build is printed too: other work on the machine slows a build
down. Files are deleted afterwards unless ``--keep``. Run from the repository root::

    python benchmarks/bench_egdb.py [--seeds 16 20 24] [--threads 2] [--dir /tmp] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kalah_core import Position, Rules, Side
from kalah_core.egdb import EndgameDatabase, build, default_path


def python_lookups_per_second(db: EndgameDatabase, count: int) -> float:
    rng = random.Random(1)
    h = db.houses
    positions = []
    for _ in range(count):
        cells = [0] * (2 * h)
        for _ in range(rng.randint(0, db.max_seeds)):
            cells[rng.randrange(2 * h)] += 1
        side = Side.SOUTH if rng.random() < 0.5 else Side.NORTH
        positions.append(Position(tuple(cells[:h]), tuple(cells[h:]), (3, 5), side))
    began = time.perf_counter()
    for position in positions:
        db.lookup(position)
    return count / (time.perf_counter() - began)


def probes_per_second(db: EndgameDatabase, count: int, repeat: int) -> float:
    rates = []
    for seed in range(1, repeat + 1):
        seconds, _ = db.table.probe_benchmark(count, seed)
        rates.append(count / seconds)
    return statistics.median(rates)


def run(max_seeds: int, args: argparse.Namespace) -> dict[str, Any]:
    rules = Rules.preset("kalah")
    path = default_path(rules, max_seeds, args.dir)
    load = os.getloadavg()[0]
    stats = build(path, rules, max_seeds, progress=not args.quiet, threads=args.threads)
    try:
        db = EndgameDatabase.open(path, rules)
        probe_rate = probes_per_second(db, args.probes, 3)
        lookup_rate = python_lookups_per_second(db, args.lookups)
        del db
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    return {
        "max_seeds": max_seeds,
        "rules": str(stats.key),
        "entries": stats.entries,
        "file_bytes": stats.file_bytes,
        "threads": stats.threads,
        "load_before": round(load, 2),
        "solve_seconds": round(stats.solve_seconds, 2),
        "write_seconds": round(stats.write_seconds, 2),
        "boards_per_second": round(stats.entries / stats.solve_seconds),
        "last_level_seconds": round(stats.level_seconds[-1], 2),
        "probes_per_second": round(probe_rate),
        "python_lookups_per_second": round(lookup_rate),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[16, 20, 24], metavar="N")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=Path("/tmp"))
    parser.add_argument("--probes", type=int, default=2_000_000, help="compiled probes per run")
    parser.add_argument("--lookups", type=int, default=50_000, help="Python lookups")
    parser.add_argument("--keep", action="store_true", help="keep the database files")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    rows = [run(n, args) for n in args.seeds]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'N':>3} {'boards':>14} {'bytes':>15} {'thr':>3} {'load':>5} {'solve s':>8} "
        f"{'write s':>7} {'Mboards/s':>9} {'Mprobes/s':>9} {'Py lookups/s':>12}"
    )
    for r in rows:
        print(
            f"{r['max_seeds']:>3} {r['entries']:>14,} {r['file_bytes']:>15,} {r['threads']:>3} "
            f"{r['load_before']:>5.2f} {r['solve_seconds']:>8.2f} {r['write_seconds']:>7.2f} "
            f"{r['boards_per_second'] / 1e6:>9.2f} {r['probes_per_second'] / 1e6:>9.2f} "
            f"{r['python_lookups_per_second']:>12,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
