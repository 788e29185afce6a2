"""A book built across processes: the local build against 1 and 2 ``kalah worker`` processes
on a real ``redis-server`` (``kalah book build --redis-url``), medians of ``--runs`` runs.

Each run builds the same section from scratch (no checkpoint, no earlier book) with the same
database (``--egdb``, given to the workers too), in one of these modes, interleaved run by run
so a change of the machine's load hits every mode alike:

- ``local``: ``build_section`` in this process (``--workers 1``);
- ``pool2``: two forked local processes (``--workers 2``), for reference;
- ``redis1``, ``redis2``: 1 or 2 ``kalah worker`` processes started (and alive) before the
  clock starts, the build posting its boards to their Redis.

Every run's book must equal the first local build's, byte for byte. The load (``uptime``) is
printed before and after. Not part of the test suite (minutes per run):

    python benchmarks/bench_book_farm.py --egdb kalah-egdb-h6-nonempty-either-owner-n20.egdb
    python benchmarks/bench_book_farm.py --seeds 3 --depth 3 --runs 1 --modes local redis2
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import RedisServer, wait_for  # noqa: E402

from kalah_core import Rules, book_build  # noqa: E402
from kalah_core.book import Book  # noqa: E402
from kalah_core.book_build import build_section  # noqa: E402
from kalah_core.tasks import Executor, LocalExecutor  # noqa: E402
from kalah_service.batch.redis_store import WORKERS  # noqa: E402
from kalah_service.batch.work import RedisExecutor  # noqa: E402

MODES = ("local", "pool2", "redis1", "redis2")


def load() -> str:
    """The load averages over 1, 5 and 15 minutes (as uptime shows them)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def start_workers(url: str, count: int) -> list[subprocess.Popen[bytes]]:
    import redis

    env = {
        **os.environ,
        "KALAH_REDIS_URL": url,
        "KALAH_EGDB_PATH": "off",  # their analyses' databases; the book's come with the task
        "KALAH_TT_MB": "16",  # their analyses' table; the book's comes with the task
        "KALAH_LOG_LEVEL": "WARNING",
    }
    workers = [
        subprocess.Popen([sys.executable, "-m", "kalah_core.cli", "worker"], cwd=ROOT, env=env)
        for _ in range(count)
    ]
    states = redis.Redis.from_url(url)
    wait_for(lambda: states.zcard(WORKERS) >= count, 120, f"{count} workers")
    return workers


def stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(30)


def build(rules: Rules, args: argparse.Namespace, executor: Executor) -> tuple[float, bytes]:
    book_build._ENGINE.clear()  # a fresh engine (table) in this process and in its forks
    started = time.perf_counter()
    section = build_section(
        rules, args.depth, args.egdb, tt_mb=args.tt_mb, stream=io.StringIO(), executor=executor
    )
    return time.perf_counter() - started, Book([section]).to_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--houses", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--egdb", action="append", default=[], metavar="PATH")
    parser.add_argument("--tt-mb", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--json", default=None, metavar="OUT", help="also write the runs here")
    args = parser.parse_args()
    rules = Rules.preset("kalah", houses=args.houses, seeds=args.seeds)
    print(f"Kalah({args.houses},{args.seeds}), {args.depth} sowings, databases {args.egdb}")
    print(f"load before: {load()}", flush=True)
    times: dict[str, list[float]] = {mode: [] for mode in args.modes}
    reference: bytes | None = None
    server = RedisServer().start()
    try:
        for run in range(args.runs):
            for mode in args.modes:
                server.flush()
                workers = start_workers(server.url, int(mode[-1])) if "redis" in mode else []
                try:
                    executor: Executor = (
                        RedisExecutor(server.url, stream=io.StringIO(), poll_s=0.2)
                        if workers
                        else LocalExecutor(2 if mode == "pool2" else 1)
                    )
                    seconds, data = build(rules, args, executor)
                finally:
                    stop(workers)
                reference = reference or data
                assert data == reference, f"{mode}: a different book"
                times[mode].append(seconds)
                print(f"run {run + 1} {mode:>6}: {seconds:7.1f} s  load {load()}", flush=True)
    finally:
        server.close()
    print(f"load after: {load()}; book {len(reference or b''):,} bytes, equal in every run")
    base = statistics.median(times["local"]) if "local" in times else None
    print("mode     median s   runs                  speed-up vs local")
    for mode, values in times.items():
        median = statistics.median(values)
        ratio = f"{base / median:.2f}x" if base else "-"
        runs = " ".join(f"{v:.1f}" for v in values)
        print(f"{mode:<8} {median:8.1f}   {runs:<20}  {ratio}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "times": times}, indent=1))


if __name__ == "__main__":
    main()
