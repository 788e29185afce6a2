"""`kalah bench` of this tree against another build of the project, run interleaved.

A change that must not slow the search (or change its tree) is measured against the commit
before it: build that commit somewhere (``git archive <commit> | tar -x -C DIR`` then
``python setup.py build_ext --inplace`` in DIR), then alternate runs of the two builds, so that
both see the same load, and compare medians::

    python benchmarks/bench_interleaved.py --base /tmp/board-base --runs 9

Each run is a fresh process (``python -m kalah_core bench --json``) with ``PYTHONPATH`` set to
one tree. Prints every run, the medians of each and their ratio (this tree / base), and fails
(exit 1) if the two node counts differ. Two times per run: the bench's own (wall clock, summed
over its analyses) and the process's CPU time (user + system, from ``getrusage``), which a
machine shared with other work disturbs less than the wall clock.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def run_once(tree: Path) -> tuple[int, float, float]:
    """One bench in a fresh process: (nodes, bench wall ms, process CPU ms)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-m", "kalah_core", "bench", "--json"],
        env=env,
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000.0
    data = json.loads(out)
    return int(data["nodes"]), float(data["time_ms"]), cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other build's tree")
    parser.add_argument("--runs", type=int, default=7, help="runs of each build")
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {"base": [], "this": []}
    cpus: dict[str, list[float]] = {"base": [], "this": []}
    nodes: dict[str, set[int]] = {"base": set(), "this": set()}
    for i in range(args.runs):
        order = [("base", args.base), ("this", HERE)]
        if i % 2:
            order.reverse()  # neither build always runs first
        for name, tree in order:
            n, ms, cpu = run_once(tree)
            times[name].append(ms)
            cpus[name].append(cpu)
            nodes[name].add(n)
            print(f"run {i + 1:2} {name:4} {n:,} nodes {ms:8.0f} ms  cpu {cpu:8.0f} ms", flush=True)
    for label, series in (("bench time", times), ("process cpu", cpus)):
        base, this = statistics.median(series["base"]), statistics.median(series["this"])
        print(
            f"{label}: median base {base:.0f} ms, this {this:.0f} ms, "
            f"ratio this/base {this / base:.3f}"
        )
    print(f"nodes base {sorted(nodes['base'])}, this {sorted(nodes['this'])}")
    return 0 if nodes["base"] == nodes["this"] and len(nodes["this"]) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
