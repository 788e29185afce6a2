"""Batch throughput: positions/s of one large batch of mid-game Kalah(6,4) positions

(a) as a job: ``POST /v1/batch`` to the app on a real ``redis-server``, run by ``--workers``
    real ``kalah worker`` processes, timed from the POST until every result is fetched (NDJSON);
(b) through ``kalah batch IN -o OUT --workers N`` locally (no Redis, no server).

Both start cold (a fresh Redis; fresh processes) and without endgame databases, so they search
the same positions with the same budget. Not part of the test suite:

    python benchmarks/bench_batch.py                      # 10,000 positions, 2 workers
    python benchmarks/bench_batch.py --positions 1000 --mode local
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from harness import RedisServer, wait_for  # noqa: E402
from load_api import midgame_positions  # noqa: E402

from kalah_service import create_app  # noqa: E402


def env_for(redis_url: str | None, tt_mb: int) -> dict[str, str]:
    env = {**os.environ, "KALAH_EGDB_PATH": "off", "KALAH_TT_MB": str(tt_mb)}
    env["KALAH_LOG_LEVEL"] = "WARNING"
    env["KALAH_REDIS_URL"] = redis_url or ""
    return env


def run_jobs(items: list[dict[str, object]], args: argparse.Namespace) -> tuple[float, int]:
    import redis

    server = RedisServer().start()
    url = server.url
    workers: list[subprocess.Popen[bytes]] = []
    try:
        env = env_for(url, args.tt_mb)
        workers = [
            subprocess.Popen([sys.executable, "-m", "kalah_core.cli", "worker"], cwd=ROOT, env=env)
            for _ in range(args.workers)
        ]
        wait_for(
            lambda: redis.Redis.from_url(url).zcard("kalah:v1:workers") >= args.workers,
            30,
            "workers",
        )
        # A job pays its searches' budgets up front: a bucket that holds this one.
        app = create_app(
            {
                "KALAH_REDIS_URL": url,
                "KALAH_EGDB_PATH": "off",
                "KALAH_LIMIT_PREMIUM": "10000000/minute",
            }
        )
        client = app.test_client()
        key, _ = app.extensions["kalah_auth"].store.create("premium")
        body = {"positions": items, "rules": "kalah", "limits": {"time_ms": args.time_ms}}
        started = time.perf_counter()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"  # the job's owner
        response = client.post("/v1/batch", json=body)
        assert response.status_code == 202, response.json
        location = response.headers["Location"]
        while True:
            status = client.get(location + "?limit=1").json
            if status["status"] in ("finished", "failed"):
                break
            time.sleep(0.2)
        assert status["status"] == "finished", status
        lines = client.get(location, headers={"Accept": "application/x-ndjson"}).data.splitlines()
        seconds = time.perf_counter() - started
        exact = sum(json.loads(line)["exact"] for line in lines)
        assert len(lines) == len(items)
        return seconds, exact
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(30)
        server.close()


def run_local(items: list[dict[str, object]], args: argparse.Namespace) -> tuple[float, int]:
    folder = Path(tempfile.mkdtemp(prefix="kalah-bench-local-"))
    try:
        source, out = folder / "in.jsonl", folder / "out.jsonl"
        source.write_text("".join(json.dumps(item) + "\n" for item in items))
        command = [sys.executable, "-m", "kalah_core.cli", "batch", str(source), "-o", str(out)]
        command += ["--workers", str(args.workers), "--time-ms", str(args.time_ms), "--quiet"]
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=env_for(None, args.tt_mb), check=True)
        seconds = time.perf_counter() - started
        lines = out.read_text().splitlines()
        assert len(lines) == len(items)
        return seconds, sum(json.loads(line)["exact"] for line in lines)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-ms", type=int, default=1000, help="budget per position")
    parser.add_argument("--tt-mb", type=int, default=64)
    parser.add_argument("--mode", choices=("both", "jobs", "local"), default="both")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    positions = midgame_positions(args.positions, args.seed, plies=(20, 34), house_seeds=(18, 24))
    items: list[dict[str, object]] = [{"position": p.compact()} for p in positions]
    print(
        f"{len(items)} distinct Kalah(6,4) positions after 20-34 random plies with 18-24 of the "
        f"48 seeds in houses; {args.time_ms} ms budget each; {args.workers} workers; no "
        "endgame database",
        flush=True,
    )
    for mode, run in (("jobs", run_jobs), ("local", run_local)):
        if args.mode in (mode, "both"):
            seconds, exact = run(items, args)
            label = (
                f"POST /v1/batch + {args.workers} kalah worker"
                if mode == "jobs"
                else f"kalah batch --workers {args.workers}"
            )
            print(
                f"{label:<36} {len(items) / seconds:8.1f} positions/s  ({seconds:.1f} s, "
                f"{exact}/{len(items)} exact)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
