"""A book built across processes: the local build against 1 and 2 ``kalah worker`` processes
on a real ``redis-server`` (``kalah book build --redis-url``), medians of ``--runs`` runs.

Each run builds the same section from scratch (no checkpoint, no earlier book) with the same
database (``--egdb``, given to the workers too) by ``kalah book build`` in one of these modes,
interleaved run by run so a change of the machine's load hits every mode alike:

- ``local``: one process (``--workers 1``);
- ``pool2``: two forked local processes (``--workers 2``), for reference;
- ``redis1``, ``redis2``: ``--redis-url`` with 1 or 2 ``kalah worker`` processes started (and
  alive) before the clock starts.

Every process (the build, each worker) runs in a session of its own, as it would on a machine
or in a container of its own: Linux's autogroup scheduling shares the CPU between sessions,
so two processes of one session get no more CPU than one on a busy machine (``pool2`` shows
it). Every run's book must equal the first one's, byte for byte. The load (``uptime``) is
printed before, during and after, and each mode's CPU seconds (the build and its workers).
Not part of the test suite (minutes per run):

    python benchmarks/bench_book_farm.py --egdb kalah-egdb-h6-nonempty-either-owner-n20.egdb
    python benchmarks/bench_book_farm.py --seeds 3 --depth 3 --runs 1 --modes local redis2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import RedisServer, wait_for  # noqa: E402

from kalah_service.jobs.redis_layout import WORKERS  # noqa: E402

MODES = ("local", "pool2", "redis1", "redis2")
TICK = os.sysconf("SC_CLK_TCK")


def load() -> str:
    """The load averages over 1, 5 and 15 minutes (as uptime shows them)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_seconds(pid: int) -> float:
    """User and system time of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def environment(url: str) -> dict[str, str]:
    return {
        **os.environ,
        "KALAH_REDIS_URL": url,
        "KALAH_EGDB_PATH": "off",  # the workers' analyses; the book's databases are --egdb
        "KALAH_TT_MB": "16",  # the workers' analysis tables; the book's is --tt-mb
        "KALAH_LOG_LEVEL": "WARNING",
    }


def start_workers(url: str, count: int) -> list[subprocess.Popen[bytes]]:
    import redis

    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "kalah_core.cli", "worker"],
            cwd=ROOT,
            env=environment(url),
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(count)
    ]
    states = redis.Redis.from_url(url)
    wait_for(lambda: states.zcard(WORKERS) >= count, 120, f"{count} workers")
    return workers


def run_mode(mode: str, args: argparse.Namespace, url: str, out: Path) -> tuple[float, float]:
    """One build: its wall seconds and the CPU seconds of the build and its workers."""
    workers = start_workers(url, int(mode[-1])) if mode.startswith("redis") else []
    command = [sys.executable, "-m", "kalah_core.cli", "book", "build", "-o", str(out)]
    command += ["--houses", str(args.houses), "--seeds", str(args.seeds)]
    command += ["--depth", str(args.depth), "--tt-mb", str(args.tt_mb)]
    command += [f"--egdb={path}" for path in args.egdb]
    command += ["--redis-url", url] if workers else ["--workers", "2" if mode == "pool2" else "1"]
    out.unlink(missing_ok=True)
    try:
        before = [cpu_seconds(w.pid) for w in workers]
        cpu = children_cpu()
        started = time.perf_counter()
        subprocess.run(
            command,
            cwd=ROOT,
            env=environment(url),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        seconds = time.perf_counter() - started
        cpu = children_cpu() - cpu
        cpu += sum(cpu_seconds(w.pid) - b for w, b in zip(workers, before, strict=True))
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(30)
    return seconds, cpu


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
    print(f"Kalah({args.houses},{args.seeds}), {args.depth} sowings, databases {args.egdb}")
    print(f"load before: {load()}", flush=True)
    times: dict[str, list[float]] = {mode: [] for mode in args.modes}
    cpus: dict[str, list[float]] = {mode: [] for mode in args.modes}
    reference: bytes | None = None
    server = RedisServer().start()
    folder = Path(tempfile.mkdtemp(prefix="kalah-bookfarm-"))
    try:
        for run in range(args.runs):
            for mode in args.modes:
                server.flush()
                out = folder / "book.bin"
                seconds, cpu = run_mode(mode, args, server.url, out)
                data = out.read_bytes()
                reference = reference or data
                assert data == reference, f"{mode}: a different book"
                times[mode].append(seconds)
                cpus[mode].append(cpu)
                print(
                    f"run {run + 1} {mode:>6}: {seconds:7.1f} s, {cpu:7.1f} CPU s  load {load()}",
                    flush=True,
                )
    finally:
        server.close()
    print(f"load after: {load()}; book {len(reference or b''):,} bytes, equal in every run")
    base = statistics.median(times["local"]) if "local" in times else None
    print("mode     median s  CPU s   runs (s)               speed-up vs local")
    for mode, values in times.items():
        median = statistics.median(values)
        ratio = f"{base / median:.2f}x" if base else "-"
        runs = " ".join(f"{v:.1f}" for v in values)
        print(f"{mode:<8} {median:8.1f} {statistics.median(cpus[mode]):6.1f}   {runs:<22} {ratio}")
    if args.json:
        record = {"args": vars(args), "times": times, "cpu": cpus, "load_after": load()}
        Path(args.json).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
