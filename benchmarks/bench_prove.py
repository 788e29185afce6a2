"""``kalah prove`` on 1 and more workers, interleaved: wall time, CPU time, and the proof.

Each run is a fresh ``kalah prove POSITION --json --checkpoint F`` process (no database unless
``--egdb``: ``KALAH_EGDB_PATH=off``), on ``--workers W`` local processes, or with ``--redis``
on W ``kalah worker`` processes of a throwaway redis-server started here (the workers started
for the run and stopped after it). The runs go round robin over the worker counts
``--repeat`` times; the figures printed are each run's, then the medians and their ratio to
the first worker count. Every run must prove the same bounds (the value), and give every test
it shares with another run and both decided the same verdict: else the script fails. With
``--cold`` (each test on an emptied table) they must also run the same tests and nodes, write
the same checkpoint once sorted and its tests ahead set aside (the same batches), and agree on
every outcome. ``--kill-after S`` kills one kalah worker (SIGKILL) S seconds into each Redis
run of 2 or more workers: the proof must come out the same, only later. ``--solve`` times the
one-process ``kalah solve --threads 1`` of the position first, for the comparison.

CPU is the prove process's own and its pool's (local runs; a kalah worker's is not counted).
Run it with ``nice -n 5`` on a shared machine, and read ``uptime`` before and after.

    nice -n 5 python benchmarks/bench_prove.py --houses 6 --seeds 4 --workers 1,2 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(200):
        try:
            redis.Redis.from_url(url).ping()
            return server, url
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def start_workers(
    url: str, count: int, env: dict[str, str], folder: Path
) -> list[subprocess.Popen[bytes]]:
    workers = []
    for n in range(count):
        with open(folder / f"worker{n}.log", "ab") as log:
            workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "kalah_core.cli", "worker"],
                    env={**env, "KALAH_REDIS_URL": url, "KALAH_LOG_LEVEL": "WARNING"},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    states = redis.Redis.from_url(url)
    while len(states.zrange("kalah:v1:workers", 0, -1)) < count:
        if any(w.poll() is not None for w in workers):
            raise RuntimeError(f"a kalah worker died at start: see {folder}")
        time.sleep(0.1)
    return workers


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGINT)  # the second: now, not after the chunk in hand
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def outcomes(path: Path) -> dict[tuple[str, int, int, int], tuple[int | None, int]]:
    found = {}
    for line in path.read_text().splitlines():
        raw = json.loads(line)
        found[(raw["key"], raw["house"], raw["beta"], raw["cap"])] = (raw["bound"], raw["nodes"])
    return found


def batches(path: Path) -> list[str]:
    """The checkpoint's lines of the tests batches asked for, sorted (tests ahead aside)."""
    return sorted(line for line in path.read_text().splitlines() if '"ahead"' not in line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--houses", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--capture", default="nonempty")
    parser.add_argument(
        "--workers",
        default="1,2",
        help="worker counts, comma-separated; WxT: W workers whose tests run on T threads",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--redis", action="store_true", help="kalah workers through Redis")
    parser.add_argument("--first-mnodes", default="1")
    parser.add_argument("--tt-mb", default="256")
    parser.add_argument("--egdb", default=None, help="an endgame database for the tests")
    parser.add_argument("--keep", default=None, help="keep checkpoints and logs in this folder")
    parser.add_argument("--kill-after", type=float, default=None, metavar="S")
    parser.add_argument("--cold", action="store_true", help="kalah prove --cold")
    parser.add_argument("--solve", action="store_true", help="time kalah solve first")
    parser.add_argument(
        "--minutes", default=None, help="each run's --minutes (then it may end open)"
    )
    args = parser.parse_args()
    counts = args.workers.split(",")
    shape = {w: tuple(int(n) for n in [*w.split("x"), "1"][:2]) for w in counts}
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-prove-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KALAH_EGDB_PATH": "off", "KALAH_TT_MB": args.tt_mb}
    board = ["start", "--houses", str(args.houses), "--seeds", str(args.seeds)]
    board += ["--capture", args.capture, "--first-mnodes", args.first_mnodes]
    board += ["--tt-mb", args.tt_mb] + (["--egdb", args.egdb] if args.egdb else [])
    board += ["--minutes", args.minutes] if args.minutes else []
    board += ["--cold"] if args.cold else []
    print(f"uptime before: {os.popen('uptime').read().strip()}")
    print(f"kalah prove {' '.join(board)}, {'redis' if args.redis else 'local'} workers {counts}")
    if args.solve:
        solve = ["start", "--houses", str(args.houses), "--seeds", str(args.seeds)]
        solve += ["--capture", args.capture, "--tt-mb", args.tt_mb, "--threads", "1"]
        solve += ["--no-book", "--prove", "value", "--json"]
        solve += ["--egdb", args.egdb] if args.egdb else []
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "kalah_core.cli", "solve", *solve],
            env=env,
            stdout=subprocess.PIPE,
            check=True,
        )
        solved = json.loads(done.stdout)
        print(
            f"kalah solve: value {solved['value']} ({'exact' if solved['exact'] else 'open'}), "
            f"{solved['nodes']:,} nodes, {time.perf_counter() - started:.1f} s wall",
            flush=True,
        )
    server, url = start_redis(folder) if args.redis else (None, "")
    runs: dict[str, list[dict[str, float]]] = {w: [] for w in counts}
    proofs: list[dict[str, object]] = []
    checkpoints: list[Path] = []
    try:
        for repeat in range(args.repeat):
            for w in counts:
                ckpt = folder / f"w{w}-r{repeat}.jsonl"
                ckpt.unlink(missing_ok=True)
                processes, threads = shape[w]
                where = ["--workers", str(processes), "--threads", str(threads)]
                workers = []
                if server is not None:
                    redis.Redis.from_url(url).flushdb()
                    workers = start_workers(url, processes, env, folder)
                    where = ["--redis-url", url, "--threads", str(threads)]
                killer = None
                if workers and len(workers) > 1 and args.kill_after is not None:
                    killer = threading.Timer(args.kill_after, workers[0].kill)
                    killer.start()
                cpu = cpu_children()
                started = time.perf_counter()
                with open(folder / f"w{w}-r{repeat}.log", "wb") as log:
                    done = subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "kalah_core.cli",
                            "prove",
                            *board,
                            *where,
                            "--json",
                            "--checkpoint",
                            str(ckpt),
                        ],
                        env=env,
                        stdout=subprocess.PIPE,
                        stderr=log,
                        check=True,
                    )
                wall = time.perf_counter() - started
                cpu = cpu_children() - cpu
                killed = killer is not None and workers[0].poll() is not None
                if killer is not None:
                    killer.cancel()
                stop(workers)
                proof = json.loads(done.stdout)
                proofs.append(proof)
                checkpoints.append(ckpt)
                ahead = (folder / f"w{w}-r{repeat}.log").read_text().count("(ahead)")
                runs[w].append({"wall": wall, "cpu": cpu})
                print(
                    f"workers {w} run {repeat + 1}: value {proof.get('value')} "
                    f"({'exact' if proof['exact'] else 'open'}), {proof['tests']} tests, "
                    f"{proof['nodes']:,} nodes, {proof['searched']:,} searched "
                    f"({ahead} tests ahead), {wall:.1f} s wall, {cpu:.1f} s CPU"
                    f"{', a worker killed' if killed else ''}",
                    flush=True,
                )
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    keep = ("value", "exact", "lower", "upper") + (("tests", "nodes") if args.cold else ())
    first = {k: proofs[0].get(k) for k in keep}
    same = all({k: p.get(k) for k in keep} == first for p in proofs)
    found = [outcomes(c) for c in checkpoints]
    verdicts = all(
        (a[slot][0] >= slot[2]) == (b[slot][0] >= slot[2])
        for a in found
        for b in found
        for slot in a.keys() & b.keys()
        if a[slot][0] is not None and b[slot][0] is not None
    )
    agree = not args.cold or all(
        a[slot] == b[slot] for a in found for b in found for slot in a.keys() & b.keys()
    )
    alike = not args.cold or all(batches(c) == batches(checkpoints[0]) for c in checkpoints)
    print(
        f"the same proof in every run: {same}; the same verdicts on shared tests: {verdicts}"
        + (f"; the same batches: {alike}; the same outcomes: {agree}" if args.cold else "")
    )
    base = statistics.median(r["wall"] for r in runs[counts[0]])
    for w in counts:
        wall = statistics.median(r["wall"] for r in runs[w])
        cpu = statistics.median(r["cpu"] for r in runs[w])
        print(f"workers {w}: median {wall:.1f} s wall, {cpu:.1f} s CPU; {base / wall:.2f}x")
    print(f"uptime after: {os.popen('uptime').read().strip()}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if same and verdicts and agree and alike else 1


if __name__ == "__main__":
    sys.exit(main())
