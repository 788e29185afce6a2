"""Soak test of the HTTP API: gunicorn + Redis (started here, loopback only) under a mixed
load at twice the sustainable rate for five minutes; prints requests/s, p50/p99, errors and
the memory (RSS) of the server processes at the start, every 30 s and at the end.

    python benchmarks/soak_api.py                  # measure, then 5 minutes
    python benchmarks/soak_api.py --minutes 1 --rate 400

1. Capacity: the mix is sent closed-loop from every connection for ``--measure-seconds``;
   the rate served is the capacity C. The *sustainable* load is C/2 (a deployment keeps that
   much headroom to hold its latency), so the soak runs at 2 x C/2 = C, open loop: requests
   are sent on a fixed schedule whether or not earlier ones were answered.
2. Soak: the same mix at that rate (or ``--rate``) for ``--minutes``. Worker recycling is off
   (``KALAH_MAX_REQUESTS=0``), so the memory figures are the processes' own.

The mix: 85% cached exact ``GET /v1/analysis`` and 5% ``GET /v1/best-move`` of warmed
mid-game Kalah(6,4) positions, 5% ``GET /v1/rules``, 5% ``GET /v1/analysis`` of positions
not asked before (end-games solved in milliseconds; each is a cache miss once). Every
answer must be a 200, and every value must equal the first answer for its position.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from load_api import Connection, Servers, midgame_positions  # noqa: E402


def build_paths(warm: int, fresh: int) -> tuple[list[str], list[str]]:
    """The schedule (cycles of 100 requests, ``fresh`` never-asked positions spread in) and the
    paths to warm beforehand."""
    cached = midgame_positions(warm, 1, plies=(24, 34), house_seeds=(14, 20))
    new = midgame_positions(fresh, 5, plies=(30, 40), house_seeds=(8, 14))
    seen = {p.compact() for p in cached}
    new = [p for p in new if p.compact() not in seen]
    paths: list[str] = []
    n = 0
    while n < len(new):
        for i in range(100):
            position = cached[(len(paths) + i) % len(cached)].compact()
            if i < 85:
                paths.append(f"/v1/analysis?position={position}&time_ms=10000")
            elif i < 90:
                paths.append(f"/v1/best-move?position={position}&time_ms=10000")
            elif i < 95:
                paths.append("/v1/rules")
            elif n < len(new):
                paths.append(f"/v1/analysis?position={new[n].compact()}&time_ms=10000")
                n += 1
    return paths, [f"/v1/analysis?position={p.compact()}&time_ms=10000" for p in cached]


def warm_up(port: int, paths: list[str]) -> None:
    connection = Connection(port)
    for path in paths:
        status, body = connection.get(path)
        assert status == 200, body


def _client(
    port: int,
    paths: list[str],
    offset: int,
    stride: int,
    threads: int,
    rate: float | None,
    seconds: float,
    out: mp.Queue,
) -> None:
    """One client process: requests ``offset, offset + stride, ...`` of the schedule."""
    lock = threading.Lock()
    state = {"next": 0}
    latencies: list[float] = []
    errors: list[str] = []
    values: dict[str, int] = {}
    wrong: list[str] = []
    started = time.perf_counter()
    deadline = started + seconds

    def worker() -> None:
        connection = Connection(port)
        while True:
            with lock:
                k = state["next"]
                state["next"] += 1
            if rate is not None:
                pause = started + k / rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            if time.perf_counter() >= deadline:
                return
            path = paths[(offset + k * stride) % len(paths)]
            sent = time.perf_counter()
            try:
                status, body = connection.get(path)
            except (OSError, ConnectionError) as error:
                with lock:
                    errors.append(f"{path}: {error!r}")
                connection = Connection(port)
                continue
            elapsed = time.perf_counter() - sent
            with lock:
                latencies.append(elapsed)
                if status != 200:
                    errors.append(f"{path}: {status}")
                elif "position=" in path:
                    key = path.split("position=")[1].split("&")[0]
                    value = json.loads(body)["value"]
                    if values.setdefault(key, value) != value:
                        wrong.append(path)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    out.put((latencies, errors, wrong))


def drive(
    port: int,
    paths: list[str],
    *,
    processes: int,
    threads: int,
    rate: float | None,
    seconds: float,
) -> tuple[list[float], list[str], list[str], float]:
    out: mp.Queue = mp.Queue()
    started = time.perf_counter()
    procs = [
        mp.Process(
            target=_client,
            args=(
                port,
                paths,
                i,
                processes,
                threads,
                None if rate is None else rate / processes,
                seconds,
                out,
            ),
        )
        for i in range(processes)
    ]
    for proc in procs:
        proc.start()
    parts = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - started
    return (
        [x for part in parts for x in part[0]],
        [x for part in parts for x in part[1]],
        [x for part in parts for x in part[2]],
        elapsed,
    )


def percentile(latencies: list[float], q: int) -> float:
    if len(latencies) < 2:
        return latencies[0] * 1000 if latencies else 0.0
    return statistics.quantiles(latencies, n=100, method="inclusive")[q - 1] * 1000


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_memory(servers: Servers) -> dict[str, int]:
    """RSS in KiB of the gunicorn master, each worker, and Redis."""
    master = servers.gunicorn.pid
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    memory = {"master": rss_kib(master)}
    for pid in children:
        memory[f"worker {pid}"] = rss_kib(int(pid))
    memory["redis"] = rss_kib(servers.redis.process.pid)
    return memory


def show_memory(label: str, memory: dict[str, int]) -> None:
    parts = ", ".join(f"{name} {kib / 1024:.1f}" for name, kib in memory.items())
    print(f"  RSS {label:>6} (MiB): {parts}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=None, help="default: CPUs")
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the soak")
    parser.add_argument("--rate", type=float, default=None, help="soak rate (default: measured)")
    parser.add_argument("--measure-seconds", type=float, default=15.0)
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--connections", type=int, default=4, help="per client process")
    parser.add_argument("--fresh", type=int, default=3000, help="never-asked positions")
    args = parser.parse_args()
    workers = args.workers or len(os.sched_getaffinity(0))
    seconds = args.minutes * 60

    servers = Servers(workers, {"KALAH_MAX_REQUESTS": "0"})
    try:
        paths, warm = build_paths(64, args.fresh)
        warm_up(servers.port, warm)
        print(
            f"machine: {os.cpu_count()} CPUs; gunicorn {workers} workers; client "
            f"{args.processes} processes x {args.connections} connections; "
            f"schedule of {len(paths)} requests ({args.fresh} fresh positions)",
            flush=True,
        )
        rate = args.rate
        if rate is None:
            latencies, errors, _, elapsed = drive(
                servers.port,
                paths,
                processes=args.processes,
                threads=args.connections,
                rate=None,
                seconds=args.measure_seconds,
            )
            capacity = len(latencies) / elapsed
            rate = capacity  # twice the sustainable load, taken as half the capacity
            print(
                f"capacity (closed loop, {elapsed:.0f} s): {capacity:.0f} req/s, "
                f"p99 {percentile(latencies, 99):.1f} ms, errors {len(errors)}; "
                f"sustainable = {capacity / 2:.0f} req/s; soak at twice that: {rate:.0f} req/s",
                flush=True,
            )
        start_memory = server_memory(servers)
        show_memory("start", start_memory)
        result: dict[str, object] = {}

        def soak() -> None:
            result["run"] = drive(
                servers.port,
                paths,
                processes=args.processes,
                threads=args.connections,
                rate=rate,
                seconds=seconds,
            )

        runner = threading.Thread(target=soak)
        runner.start()
        begun = time.monotonic()
        samples = [start_memory]
        while runner.is_alive():
            runner.join(30)
            if runner.is_alive():
                samples.append(server_memory(servers))
                show_memory(f"{time.monotonic() - begun:.0f} s", samples[-1])
        latencies, errors, wrong, elapsed = result["run"]  # type: ignore[misc]
        end_memory = server_memory(servers)
        show_memory("end", end_memory)
        total_start = sum(start_memory.values()) / 1024
        total_end = sum(end_memory.values()) / 1024
        peak = max(sum(s.values()) for s in [*samples, end_memory]) / 1024
        print(
            f"soak: {len(latencies)} requests in {elapsed:.0f} s = {len(latencies) / elapsed:.0f} "
            f"req/s (target {rate:.0f}); p50 {percentile(latencies, 50):.1f} ms, "
            f"p99 {percentile(latencies, 99):.1f} ms, max {max(latencies) * 1000:.0f} ms; "
            f"errors {len(errors)}, inconsistent values {len(wrong)}; "
            f"server RSS {total_start:.0f} MiB at the start, {total_end:.0f} MiB at the end, "
            f"peak {peak:.0f} MiB",
            flush=True,
        )
        for line in errors[:10]:
            print("  error:", line)
        return 0 if not errors and not wrong else 1
    finally:
        servers.close()


if __name__ == "__main__":
    sys.exit(main())
