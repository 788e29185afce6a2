"""Load benchmark of the HTTP API: gunicorn (api/ops/gunicorn_conf.py) + a real Redis, both
started here on loopback ports, driven by a small pure-Python HTTP/1.1 keep-alive client.

    python benchmarks/load_api.py                 # all scenarios, default bounds
    python benchmarks/load_api.py --seconds 10 --connections 16

Scenarios (each bounded by a request count and a time limit):

(a) cached: ``GET /v1/analysis`` of mid-game Kalah(6,4) positions solved beforehand (exact
    answers: served from the worker's memory, or from Redis on its first read there);
(a') cached heuristic: the same with ``depth=4`` answers, which live in Redis only, so every
    request goes through Redis;
(b) uncached exact: ``GET /v1/analysis`` of fresh mid-game Kalah(6,4) positions, each asked
    once, the solver proving every value.

Prints requests/s and latency percentiles per scenario. Loopback only; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from harness import Gunicorn, RedisServer  # noqa: E402

from kalah_core import Position, Rules, legal_moves, play  # noqa: E402

UNCACHED_PLIES = (12, 30)
UNCACHED_SEEDS = (24, 34)
"""The mid-game positions of scenario (b): reached by that many random plies from the start,
with that many seeds still in the houses."""

_CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)


# ----------------------------------------------------------------------------- the client


class Connection:
    """One keep-alive HTTP/1.1 connection: send a GET, read the whole response."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = self._connect()
        self.buffer = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def get(self, path: str) -> tuple[int, bytes]:
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n".encode()
        )
        try:
            self.sock.sendall(request)
            return self._read()
        except (ConnectionError, OSError):  # the server closed a kept-alive connection: retry once
            self.sock.close()
            self.sock, self.buffer = self._connect(), b""
            self.sock.sendall(request)
            return self._read()

    def _read(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        status = int(head[9:12])
        match = _CONTENT_LENGTH.search(head)
        length = int(match.group(1)) if match else 0
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            rest += chunk
        body, self.buffer = rest[:length], rest[length:]
        return status, body


def _client_process(
    port: int, paths: list[str], threads: int, count: int, seconds: float, out: mp.Queue
) -> None:
    """One client process: ``threads`` connections, each sending requests in turn, until
    ``count`` requests in all or ``seconds`` have passed. Puts (latencies, errors, cached)."""
    lock = threading.Lock()
    state = {"next": 0, "errors": 0, "cached": 0}
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    def worker() -> None:
        connection = Connection(port)
        local: list[float] = []
        errors = cached = 0
        while time.perf_counter() < deadline:
            with lock:
                i = state["next"]
                if i >= count:
                    break
                state["next"] = i + 1
            path = paths[i % len(paths)]
            started = time.perf_counter()
            status, body = connection.get(path)
            local.append(time.perf_counter() - started)
            if status != 200:
                errors += 1
            elif b'"cached":true' in body[:20]:
                cached += 1
        with lock:
            latencies.extend(local)
            state["errors"] += errors
            state["cached"] += cached

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out.put((latencies, state["errors"], state["cached"]))


@dataclass
class Result:
    name: str
    requests: int
    seconds: float
    latencies: list[float] = field(repr=False)
    errors: int
    cached: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000

    def line(self) -> str:
        return (
            f"{self.name:<34} {self.requests:>7} req in {self.seconds:6.2f} s "
            f"= {self.rps:8.1f} req/s   "
            f"p50 {self.percentile(50):7.2f} ms  p90 {self.percentile(90):7.2f} ms  "
            f"p99 {self.percentile(99):7.2f} ms  max {max(self.latencies) * 1000:7.1f} ms   "
            f"errors {self.errors}  cached {self.cached}"
        )


def load(
    name: str,
    port: int,
    paths: list[str],
    *,
    processes: int,
    threads: int,
    count: int,
    seconds: float,
) -> Result:
    out: mp.Queue = mp.Queue()
    share = [count // processes + (1 if i < count % processes else 0) for i in range(processes)]
    started = time.perf_counter()
    procs = [
        mp.Process(
            target=_client_process,
            args=(port, paths[i::processes] or paths, threads, share[i], seconds, out),
        )
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    parts = [out.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - started
    latencies = [x for part in parts for x in part[0]]
    return Result(
        name, len(latencies), elapsed, latencies, sum(p[1] for p in parts), sum(p[2] for p in parts)
    )


def wrk_load(name: str, port: int, paths: list[str], *, connections: int, seconds: float) -> str:
    """The same scenario driven by ``wrk`` (a C client, if installed): a cross-check that the
    figures measure the server rather than the Python client."""
    script = Path(tempfile.mkstemp(prefix="kalah-wrk-", suffix=".lua")[1])
    listed = ", ".join(json.dumps(p) for p in paths)
    script.write_text(
        f"local paths = {{{listed}}}\nlocal i = 0\n"
        "request = function()\n  i = i + 1\n"
        "  return wrk.format('GET', paths[(i % #paths) + 1])\nend\n"
    )
    try:
        out = subprocess.run(
            [
                "wrk",
                "-t2",
                f"-c{connections}",
                f"-d{int(seconds)}s",
                "--latency",
                "-s",
                str(script),
                f"http://127.0.0.1:{port}",
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
        ).stdout
    finally:
        script.unlink()
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return (
        f"{name:<34} wrk -c{connections}: {rps.group(1) if rps else '?'} req/s   "
        f"p50 {p50.group(1) if p50 else '?'}  p99 {p99.group(1) if p99 else '?'}   "
        f"non-2xx {errors.group(1) if errors else 0}"
    )


# ----------------------------------------------------------------------------- positions


def midgame_positions(
    n: int, seed: int, *, plies: tuple[int, int], house_seeds: tuple[int, int]
) -> list[Position]:
    """Distinct Kalah(6,4) positions reached by random play, with a bounded number of seeds
    left in the houses (the solver proves them in milliseconds to a few seconds)."""
    rules = Rules()
    rng = random.Random(seed)
    found: dict[str, Position] = {}
    while len(found) < n:
        position = Position.start(rules)
        for _ in range(rng.randint(*plies)):
            moves = legal_moves(position, rules)
            if not moves:
                break
            position = play(position, rules, rng.choice(moves)).after
        left = sum(position.south) + sum(position.north)
        if legal_moves(position, rules) and house_seeds[0] <= left <= house_seeds[1]:
            found[position.compact()] = position
    return list(found.values())


# ----------------------------------------------------------------------------- servers


class Servers:
    """A real Redis and gunicorn (tests/harness.py, as the tests run them) on loopback."""

    def __init__(self, workers: int, env: dict[str, str] | None = None) -> None:
        self.redis = RedisServer().start()
        # One client address: the limiter runs (its cost is measured) but never refuses.
        limit = os.environ.get("KALAH_LIMIT_ANONYMOUS", "1000000000/minute")
        self.server = Gunicorn(
            {
                "KALAH_REDIS_URL": self.redis.url,
                "KALAH_WORKERS": str(workers),
                "KALAH_MAX_TIME_MS": os.environ.get("KALAH_MAX_TIME_MS", "10000"),
                "KALAH_LIMIT_ANONYMOUS": limit,
                **(env or {}),
            }
        )
        self.port = self.server.port
        try:
            self.server.start(ready=True)
        except RuntimeError:
            self.redis.close()
            raise
        assert self.server.process is not None
        self.gunicorn = self.server.process

    def close(self) -> None:
        self.server.close()
        self.redis.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="gunicorn workers (default: CPUs)"
    )
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="time limit of each cached scenario"
    )
    parser.add_argument(
        "--requests", type=int, default=40000, help="request limit of each cached scenario"
    )
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument(
        "--connections", type=int, default=4, help="keep-alive connections per client process"
    )
    parser.add_argument(
        "--positions", type=int, default=64, help="positions of the cached scenarios"
    )
    parser.add_argument(
        "--uncached", type=int, default=100, help="positions of the uncached scenario"
    )
    parser.add_argument(
        "--uncached-seconds", type=float, default=90.0, help="time limit of the uncached scenario"
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument(
        "--wrk", action="store_true", help="also drive (a) and (a') with wrk if installed"
    )
    args = parser.parse_args()
    workers = args.workers or len(os.sched_getaffinity(0))

    print(
        f"machine: {os.cpu_count()} CPUs; gunicorn: {workers} workers (gthread); client: "
        f"{args.processes} processes x {args.connections} keep-alive connections",
        flush=True,
    )
    servers = Servers(workers)
    results: list[Result] = []
    try:
        warm = midgame_positions(args.positions, 1, plies=(24, 34), house_seeds=(14, 20))
        exact_paths = [f"/v1/analysis?position={p.compact()}&time_ms=10000" for p in warm]
        heuristic_paths = [f"/v1/analysis?position={p.compact()}&depth=4" for p in warm]
        prepared = Connection(servers.port)
        for path in exact_paths + heuristic_paths:
            status, body = prepared.get(path)
            assert status == 200, body
        exact = sum(json.loads(prepared.get(p)[1])["exact"] for p in exact_paths)
        print(
            f"warmed {len(exact_paths)} positions ({exact} exact) "
            f"and {len(heuristic_paths)} depth-4 answers"
        )

        # Short warm-up of the client and workers, not counted.
        load(
            "warm-up",
            servers.port,
            exact_paths,
            processes=args.processes,
            threads=args.connections,
            count=2000,
            seconds=3,
        )
        results.append(
            load(
                "(a) cached exact GET /v1/analysis",
                servers.port,
                exact_paths,
                processes=args.processes,
                threads=args.connections,
                count=args.requests,
                seconds=args.seconds,
            )
        )
        print(results[-1].line(), flush=True)
        results.append(
            load(
                "(a') cached heuristic (via Redis)",
                servers.port,
                heuristic_paths,
                processes=args.processes,
                threads=args.connections,
                count=args.requests,
                seconds=args.seconds,
            )
        )
        print(results[-1].line(), flush=True)

        if args.wrk and shutil.which("wrk"):
            for name, paths in (
                ("(a) cached exact", exact_paths),
                ("(a') cached heuristic", heuristic_paths),
            ):
                print(
                    wrk_load(
                        name,
                        servers.port,
                        paths,
                        connections=args.processes * args.connections,
                        seconds=args.seconds,
                    ),
                    flush=True,
                )

        if args.uncached > 0:
            fresh = midgame_positions(
                args.uncached, 2, plies=UNCACHED_PLIES, house_seeds=UNCACHED_SEEDS
            )
            fresh = [p for p in fresh if p.compact() not in {w.compact() for w in warm}]
            uncached_paths = [f"/v1/analysis?position={p.compact()}&time_ms=10000" for p in fresh]
            result = load(
                "(b) uncached exact GET /v1/analysis",
                servers.port,
                uncached_paths,
                processes=1,
                threads=workers,
                count=len(uncached_paths),
                seconds=args.uncached_seconds,
            )
            results.append(result)
            print(result.line(), flush=True)
            answers = [json.loads(prepared.get(p)[1]) for p in uncached_paths[: result.requests]]
            solved = sum(a["exact"] for a in answers)
            times = [a["time_ms"] for a in answers]
            print(
                f"    (b) positions: {UNCACHED_PLIES[0]}-{UNCACHED_PLIES[1]} random plies, "
                f"{UNCACHED_SEEDS[0]}-{UNCACHED_SEEDS[1]} of the 48 seeds left in houses; "
                f"{solved}/{len(answers)} proven exact; "
                f"search time median {statistics.median(times):.0f} ms, max {max(times):.0f} ms; "
                f"nodes median {statistics.median(a['nodes'] for a in answers):.0f}"
            )
        if args.json:
            print(
                json.dumps(
                    [
                        {
                            "name": r.name,
                            "requests": r.requests,
                            "rps": round(r.rps, 1),
                            "p50_ms": round(r.percentile(50), 2),
                            "p99_ms": round(r.percentile(99), 2),
                            "errors": r.errors,
                        }
                        for r in results
                    ]
                )
            )
    finally:
        servers.close()
    return 0 if all(r.errors == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
