"""The hard set: mid-game positions whose proofs are long, timed against a baseline commit.

    python benchmarks/hard_set.py generate [--egdb-dir /work/egdb]   # writes hard_set.json
    python benchmarks/hard_set.py run --baseline HEAD~1 [--threads 2] [--egdb-dir /work/egdb]
    python benchmarks/hard_set.py run --held-out ...                 # the held-out set instead
    python benchmarks/hard_set.py run --capture always ...           # its empty-capture half

``generate`` plays fixed-seed random games of Kalah(6,4), (6,5) and (6,6) under both capture
rules, keeps positions with 40-60 seeds in houses whose single-thread proof of the value
(``prove="value"``, 24-seed database) costs between MIN_NODES and MAX_NODES nodes, and stores
each with its exact value in ``benchmarks/hard_set.json``. ``--held-out`` draws another set the
same way from other random games, three positions per size and capture rule, into
``benchmarks/held_out.json``: a weight or a threshold chosen on the hard set is checked there,
on positions it was not chosen on.

``run`` builds the baseline commit in a temporary directory (``git archive`` + ``build_ext
--inplace``), starts one worker process per build, and proves every position with 1 thread and
with ``--threads`` threads, baseline and this tree alternately (the order flips from one position
to the next, so drift in the machine's load falls on both alike). It prints each proof's time and
nodes, the totals, medians and the per-position geometric mean of the ratios, and checks every
value against the stored one. Each proof starts from an empty table; the databases are mapped
once per worker and read through before the first proof (neither the load nor the first touch
of a page is counted: they once made a single-thread proof 4x slower than the same proof in the
other build).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).with_name("hard_set.json")
HELD_OUT = Path(__file__).with_name("held_out.json")
SIZES = (4, 5, 6)
CAPTURES = ("nonempty", "always")
DATABASES = {"nonempty": "kalah-24.egdb", "always": "always-24.egdb"}
PER_GAME = 2  # positions kept per (seeds, capture)
HELD_OUT_PER_GAME = 3
MIN_NODES = 1_500_000
MAX_NODES = 40_000_000
TT_MB = 256

# A worker: reads {"rules", "position", "threads"} lines, answers {"value", "nodes", "seconds"}.
WORKER = r"""
import json, sys, time
from kalah_core import Rules
from kalah_core.egdb import EndgameDatabase
from kalah_core.position import parse_position
from kalah_core.solver import Engine

egdb_dir = sys.argv[1]
databases = {"nonempty": "kalah-24.egdb", "always": "always-24.egdb"}
opened = {}
engines = {}
for line in sys.stdin:
    job = json.loads(line)
    rules = Rules.from_json(job["rules"])
    key = (rules.capture, job["threads"], job["tt_mb"])
    db = opened.get(rules.capture)
    if db is None:
        path = f"{egdb_dir}/{databases[rules.capture]}"
        db = opened[rules.capture] = EndgameDatabase.open(path, rules)
        db.verify()  # reads every page: no proof pays for first touches
    if key not in engines:
        try:
            engines[key] = Engine(job["tt_mb"], [db], threads=job["threads"])
        except TypeError:  # a baseline without threads
            engines[key] = Engine(job["tt_mb"], [db]) if job["threads"] == 1 else None
    engine = engines[key]
    if engine is None:
        print(json.dumps(None), flush=True)
        continue
    position = parse_position(job["position"], rules)
    engine.clear()
    nodes = job.get("nodes") or None
    started, cpu = time.perf_counter(), time.process_time()
    a = engine.analyse(position, rules, prove="value", pv_limit=1, nodes=nodes)
    seconds = time.perf_counter() - started
    print(json.dumps({"value": a.value, "exact": a.exact, "nodes": a.nodes,
                      "seconds": seconds, "cpu": time.process_time() - cpu}), flush=True)
"""


class Worker:
    """A process solving positions with the kalah_core of ``tree``."""

    def __init__(self, tree: Path, egdb_dir: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, egdb_dir],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def solve(self, entry: dict[str, Any], threads: int, nodes: int = 0, tt_mb: int = TT_MB) -> Any:
        job = {**entry, "threads": threads, "tt_mb": tt_mb, "nodes": nodes}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        select.select([self.process.stdout], [], [])
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def seeds_in_houses(position: Any) -> int:
    return sum(position.south) + sum(position.north)


def generate(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from kalah_core import Rules
    from kalah_core.game import legal_moves, outcome, play
    from kalah_core.position import parse_position

    worker = Worker(ROOT, args.egdb_dir)
    entries = []
    for seeds in SIZES:
        for capture in CAPTURES:
            rules = Rules(houses=6, seeds=seeds, capture=capture)
            salt = "validation-" if args.held_out else ""
            rng = random.Random(f"{salt}{seeds}-{capture}")
            kept = 0
            while kept < (HELD_OUT_PER_GAME if args.held_out else PER_GAME):
                # A random game down to a random number of seeds in houses (the fewer, the
                # cheaper the proof: Kalah(6,6) positions with 55 seeds take hours).
                target = rng.randrange(40, 53)
                position = parse_position("start", rules)
                played = 0
                while outcome(position, rules) is None and (
                    played < 4 or seeds_in_houses(position) > target
                ):
                    move = rng.choice(legal_moves(position, rules))
                    position = play(position, rules, move).after
                    played += 1
                n = seeds_in_houses(position)
                if outcome(position, rules) is not None or not 40 <= n <= 60:
                    continue
                entry = {"rules": rules.to_json(), "position": position.compact()}
                answer = worker.solve(entry, 1, MAX_NODES)
                print(f"  {rules.key:10} {position.compact():28} {n} seeds: {answer}", flush=True)
                if answer["exact"] and answer["nodes"] >= MIN_NODES:
                    entries.append({**entry, "seeds": n, "value": answer["value"]})
                    kept += 1
    worker.close()
    path = data_file(args)
    write_entries(entries, path)
    print(f"{len(entries)} positions written to {path}")


def data_file(args: argparse.Namespace) -> Path:
    return HELD_OUT if args.held_out else DATA


def write_entries(entries: list[dict[str, Any]], path: Path) -> None:
    """One position a line: the rules, the position, its seeds in houses, its exact value."""
    lines = ",\n ".join(json.dumps(entry) for entry in entries)
    path.write_text(f"[{lines}]\n", encoding="utf-8")


def build_baseline(rev: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=into,
        check=True,
        capture_output=True,
    )


def run(args: argparse.Namespace) -> None:
    entries = json.loads(data_file(args).read_text(encoding="utf-8"))
    if args.capture:  # e.g. the empty-capture positions only: one database to build
        entries = [e for e in entries if e["rules"]["capture"] == args.capture]
    if args.limit:
        entries = entries[: args.limit]
    with tempfile.TemporaryDirectory(prefix="hard-set-baseline-") as tmp:
        print(f"building {args.baseline} in {tmp} ...", flush=True)
        build_baseline(args.baseline, Path(tmp))
        trees = {"base": Path(tmp), "new": ROOT}
        workers = {name: Worker(tree, args.egdb_dir) for name, tree in trees.items()}
        thread_counts = sorted({1, args.threads})
        for worker in workers.values():  # map the databases' pages in each process, untimed
            worker.solve(entries[0], 1, 1_000_000)
        rows: list[dict[str, Any]] = []
        print(f"load average before: {os.getloadavg()}")
        head = f"{'position':40} thr  {'base s':>8} {'new s':>8} {'ratio':>6}"
        print(f"{head}  base/new nodes, CPU s")
        for i, entry in enumerate(entries):
            for threads in thread_counts:
                order = ["base", "new"] if i % 2 == 0 else ["new", "base"]
                got = {name: workers[name].solve(entry, threads) for name in order}
                for name, answer in got.items():
                    if answer is not None and answer["value"] != entry["value"]:
                        raise SystemExit(f"{name} gives {answer['value']} for {entry}")
                base, new = got["base"], got["new"]
                row = {"entry": entry, "threads": threads, "base": base, "new": new}
                rows.append(row)
                label = f"{entry['rules']['seeds']}{entry['rules']['capture'][0]} "
                label += f"{entry['position']} {entry['value']:+d}"
                base_s = f"{base['seconds']:8.2f}" if base else "     n/a"
                ratio = f"{base['seconds'] / new['seconds']:6.2f}" if base else "   n/a"
                nodes = f"{base['nodes']:,}/{new['nodes']:,}" if base else f"-/{new['nodes']:,}"
                cpu = f"{base['cpu']:.2f}/{new['cpu']:.2f}" if base else f"-/{new['cpu']:.2f}"
                row_s = f"{label:40} {threads:3}  {base_s} {new['seconds']:8.2f} {ratio}"
                print(f"{row_s}  {nodes}  {cpu}")
                sys.stdout.flush()
        for worker in workers.values():
            worker.close()
    print(f"load average after: {os.getloadavg()}")
    for threads in thread_counts:
        chosen = [r for r in rows if r["threads"] == threads]
        for name in ("base", "new"):
            answers = [r[name] for r in chosen if r[name] is not None]
            if len(answers) != len(chosen):
                print(f"{threads} thread(s), {name}: not supported")
                continue
            seconds = [a["seconds"] for a in answers]
            cpu = [a["cpu"] for a in answers]
            nodes = sum(a["nodes"] for a in answers)
            print(
                f"{threads} thread(s), {name}: total {sum(seconds):.1f} s, median "
                f"{statistics.median(seconds):.2f} s, CPU {sum(cpu):.1f} s, {nodes:,} nodes"
            )
        pairs = [(r["base"], r["new"]) for r in chosen if r["base"] is not None]
        if pairs:
            geo = math.exp(
                statistics.fmean(math.log(b["seconds"] / n["seconds"]) for b, n in pairs)
            )
            total = sum(b["seconds"] for b, _ in pairs) / sum(n["seconds"] for _, n in pairs)
            print(f"{threads} thread(s): base/new total {total:.2f}x, geometric mean {geo:.2f}x")
    one = {id(r["entry"]): r["new"] for r in rows if r["threads"] == 1}
    many = [r for r in rows if r["threads"] == args.threads and args.threads > 1]
    if many:
        speedup = sum(one[id(r["entry"])]["seconds"] for r in many) / sum(
            r["new"]["seconds"] for r in many
        )
        print(f"new, {args.threads} threads against 1: {speedup:.2f}x (total time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("generate", "run"))
    parser.add_argument("--egdb-dir", default="/work/egdb", help="holds the 24-seed databases")
    parser.add_argument("--baseline", default="HEAD~1", help="commit to compare against")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--limit", type=int, default=0, help="only the first N positions")
    parser.add_argument("--held-out", action="store_true", help="the held-out set instead")
    parser.add_argument("--capture", choices=CAPTURES, help="only the positions of this capture")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
