"""Where a `kalah solve` process spends its time outside the search, phase by phase.

    python benchmarks/startup.py [--egdb /work/egdb/always-24.egdb] [--runs 5] [--baseline DIR]

Each run is a fresh process doing what ``kalah solve POS --capture always --seeds 4 --prove
value --threads 1 --egdb DB`` does, timed around each phase: the imports of ``kalah_core.cli``,
the parser, the opening books, the table (its first 16 MiB faulted in), the database's
mapping (mapped, not read), the search itself, and the process as a whole (from the parent,
so the interpreter's start and exit are counted). It prints each phase's median wall time and
median CPU time (user + system: on a loaded machine the wall time of a phase mostly measures
the wait for a core). Then the command itself runs in a process of its own: less the phases'
search, what it spends outside the search. With ``--baseline DIR`` (a tree with its
extensions built in place, e.g. ``git archive REV | tar -x -C DIR && python setup.py build_ext
--inplace`` there) the two trees run alternately and both are shown.

Each tree's package is byte-compiled first, as ``pip install`` does: a checkout whose Python
never writes bytecode (``PYTHONDONTWRITEBYTECODE``) compiles every module it imports in every
process, which no installed ``kalah`` does (``--as-is`` measures the trees as they are).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One `kalah solve`, phase by phase: prints {"phase": [wall, cpu], ...} as JSON.
CHILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
phases = {}
t0, c0 = time.perf_counter(), cpu()
def lap(name):
    global t0, c0
    t, c = time.perf_counter(), cpu()
    phases[name] = [t - t0, c - c0]
    t0, c0 = t, c
import kalah_core.cli as cli
lap("imports")
argv = ["solve", sys.argv[2], "--capture", "always", "--seeds", "4", "--prove", "value",
        "--threads", "1", "--egdb", sys.argv[1], "--json"]
try:
    parser = cli.build_parser(plugins=False)
except TypeError:  # a tree before the built-in commands skipped the plugins
    parser = cli.build_parser()
args = parser.parse_args(argv)
lap("parser")
from kalah_core import book, deepbook
from kalah_core.egdb import EndgameDatabase
from kalah_core.solver import Engine
books = (book.shipped(), deepbook.shipped())
lap("books")
engine = Engine(tt_mb=args.tt_mb, book=books[0], threads=1, deep_book=books[1])
lap("table")
rules = cli.rules_from_args(args)
engine.attach(EndgameDatabase.open(args.egdb[0], rules))
lap("database map")
position = cli.position_from_arg(args.position, rules)
analysis = engine.analyse(position, rules, prove=args.prove)
lap("search")
cli.emit(args, "", {"value": analysis.value})
lap("output")
print(json.dumps(phases))
"""


# The command itself, as the user runs it: its process less the phases' search is what the
# command spends outside the search (its own imports, not the phases' copy of them).
COMMAND = (
    "import sys; from kalah_core.cli import main; raise SystemExit(main(['solve', sys.argv[2], "
    "'--capture', 'always', '--seeds', '4', '--prove', 'value', '--threads', '1', '--egdb', "
    "sys.argv[1], '--json', '--no-progress']))"
)


def process(tree: Path, code: str, egdb: str, position: str) -> tuple[str, list[float]]:
    """Run ``code`` in a fresh process: its output, and its [wall, cpu] from the parent."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, egdb, position],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
    ).stdout
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, [wall, cpu]


def one(tree: Path, egdb: str, position: str) -> dict[str, list[float]]:
    out, whole = process(tree, CHILD, egdb, position)
    phases: dict[str, list[float]] = json.loads(out.splitlines()[-1])
    search = phases["search"]
    phases["process"] = whole
    phases["outside the search"] = [whole[0] - search[0], whole[1] - search[1]]
    _, command = process(tree, COMMAND, egdb, position)
    phases["kalah solve (process)"] = command
    phases["kalah solve outside the search"] = [command[0] - search[0], command[1] - search[1]]
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--egdb", default="/work/egdb/always-24.egdb")
    parser.add_argument("--position", default="051665-1-051665-1-s", help="Kalah(6,4)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default=None, help="a built tree to compare with")
    parser.add_argument("--as-is", action="store_true", help="no byte-compiling first")
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline:
        trees = {"baseline": Path(args.baseline), **trees}
    if not args.as_is:
        for tree in trees.values():
            compileall.compile_dir(tree / "kalah_core", quiet=1)
    runs: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
    print(f"load average before: {os.getloadavg()}")
    for i in range(args.runs):
        names = list(trees) if i % 2 == 0 else list(reversed(trees))
        for name in names:
            runs[name].append(one(trees[name], args.egdb, args.position))
    print(f"load average after: {os.getloadavg()}")
    phases = list(runs["this tree"][0])
    print(f"{'phase (medians of ' + str(args.runs) + ')':24}" + "".join(f"{n:>24}" for n in trees))
    for phase in phases:
        line = f"{phase:24}"
        for name in trees:
            wall = statistics.median(r[phase][0] for r in runs[name])
            cpu = statistics.median(r[phase][1] for r in runs[name])
            line += f"  {wall:8.3f} s ({cpu:6.3f} cpu)"
        print(line)


if __name__ == "__main__":
    main()
