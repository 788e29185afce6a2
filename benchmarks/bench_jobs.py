"""Batch jobs on a real ``redis-server`` run by real ``kalah worker`` processes: what the queue
costs and how it behaves, for the choice between RQ and the job store's own queue (issue 31).

(a) wake-up: a worker idle for ``--idle-s`` seconds (longer than the job store's 10 s Redis
    socket timeout), then a 40-item job of endgame positions (exact in milliseconds): seconds
    from the POST until the job is finished;
(b) throughput: ``--positions`` mid-game Kalah(6,4) positions at ``--time-ms`` each, with 1
    and then 2 workers: seconds from the POST until finished, and positions/s;
(c) a worker killed (SIGKILL) one second into the throughput job of 2 workers: seconds until
    the job is finished, and whether every result is there.

Each scenario is run ``--repeat`` times and its median printed. Run it against another
checkout (e.g. an export of ``main``, with its compiled extension) by putting that first on
``PYTHONPATH``: the workers and the app then both come from there. Not part of the test suite:

    python benchmarks/bench_jobs.py --repeat 1 --idle-s 12 --positions 40
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kalah_service
from kalah_service import create_app

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import redis  # noqa: E402
from flask.testing import FlaskClient  # noqa: E402
from harness import RedisServer, wait_for  # noqa: E402
from load_api import midgame_positions  # noqa: E402

WORKERS = "kalah:v1:workers"


def endgame(count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` distinct endgame boards (48 seeds), solved exactly in milliseconds."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    n = start
    while len(out) < count:
        n += 1
        south = [n % 3, (n // 3) % 3, 1, 0, (n // 9) % 2, 1]
        north = [1, 0, (n // 18) % 3, 1, 0, (n // 54) % 2 + 1]
        left = sum(south) + sum(north)
        key = repr((south, north, n % 2))
        if key in seen:
            continue
        seen.add(key)
        out.append(
            {
                "position": {
                    "south": south,
                    "north": north,
                    "stores": [24 - left // 2, 24 - (left - left // 2)],
                    "to_move": "south" if n % 2 else "north",
                }
            }
        )
    return out


class Setup:
    def __init__(self, workers: int) -> None:
        self.redis = RedisServer().start()
        self.url = self.redis.url
        env = {
            **os.environ,
            "KALAH_REDIS_URL": self.url,
            "KALAH_EGDB_PATH": "off",
            "KALAH_TT_MB": "16",
            "KALAH_LOG_LEVEL": "WARNING",
        }
        self.workers = [
            subprocess.Popen(
                [sys.executable, "-m", "kalah_core.cli", "worker"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        r = redis.Redis.from_url(self.url)
        wait_for(lambda: r.zcard(WORKERS) >= workers, 60, "workers")
        app = create_app(
            {
                "KALAH_REDIS_URL": self.url,
                "KALAH_EGDB_PATH": "off",
                "KALAH_LIMIT_PREMIUM": "10000000/minute",
                "KALAH_BATCH_INLINE_MAX": 1,
            }
        )
        self.client: FlaskClient = app.test_client()
        key, _ = app.extensions["kalah_auth"].store.create("premium")
        self.client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"

    def run(self, items: list[dict[str, Any]], time_ms: int, during: Callable[[], None]) -> float:
        """Seconds from the POST until the job is finished (every result fetched)."""
        body = {"positions": items, "rules": "kalah", "limits": {"time_ms": time_ms}}
        started = time.perf_counter()
        response = self.client.post("/v1/batch", json=body)
        assert response.status_code == 202, response.json
        location = response.headers["Location"]
        during()
        while True:
            status = self.client.get(location + "?limit=1").json
            if status["status"] in ("finished", "failed"):
                break
            time.sleep(0.05)
        assert status["status"] == "finished", status
        lines = self.client.get(location, headers={"Accept": "application/x-ndjson"}).data
        seconds = time.perf_counter() - started
        assert len(lines.splitlines()) == len(items)
        assert b"null" not in lines.splitlines()
        return seconds

    def close(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in self.workers:
            worker.wait(30)
        self.redis.close()


def median_of(repeat: int, once: Callable[[int], float]) -> tuple[float, list[float]]:
    """The median of ``repeat`` runs (each given its number: fresh positions, no cache)."""
    runs = [round(once(rep), 2) for rep in range(repeat)]
    return statistics.median(runs), runs


def midgame(count: int, seed: int) -> list[dict[str, Any]]:
    """Distinct Kalah(6,4) positions early in the game: each search runs its whole budget."""
    positions = midgame_positions(count, seed, plies=(8, 16), house_seeds=(30, 40))
    return [{"position": p.compact()} for p in positions]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle-s", type=float, default=15.0)
    parser.add_argument("--positions", type=int, default=120)
    parser.add_argument("--time-ms", type=int, default=100)
    parser.add_argument("--scenarios", default="abc", help="which of (a), (b), (c) to run")
    args = parser.parse_args()
    print(f"code under test: {Path(kalah_service.__file__).parent}", flush=True)

    if "a" in args.scenarios:
        setup = Setup(1)
        try:

            def wake(rep: int) -> float:
                time.sleep(args.idle_s)
                return setup.run(endgame(40, 1000 * rep), 1000, lambda: None)

            m, runs = median_of(args.repeat, wake)
            print(
                f"(a) 40-item job after {args.idle_s:.0f} s idle, 1 worker: median {m:.2f} s {runs}"
            )
        finally:
            setup.close()

    if "b" in args.scenarios:
        for workers in (1, 2):
            setup = Setup(workers)
            try:
                m, runs = median_of(
                    args.repeat,
                    lambda rep, s=setup: s.run(
                        midgame(args.positions, rep), args.time_ms, lambda: None
                    ),
                )
                rate = args.positions / m
                print(
                    f"(b) {args.positions} positions at {args.time_ms} ms, {workers} workers: "
                    f"median {m:.2f} s ({rate:.1f}/s) {runs}",
                    flush=True,
                )
            finally:
                setup.close()

    def killed(rep: int) -> float:
        setup = Setup(2)
        try:

            def kill_one() -> None:
                time.sleep(1.0)
                setup.workers[0].send_signal(signal.SIGKILL)

            return setup.run(midgame(args.positions, 100 + rep), args.time_ms, kill_one)
        finally:
            setup.close()

    if "c" in args.scenarios:
        m, runs = median_of(args.repeat, killed)
        print(f"(c) (b) with 2 workers, one killed after 1 s: median {m:.2f} s {runs}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
