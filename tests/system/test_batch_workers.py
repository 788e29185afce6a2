"""A 1,000-position batch on a real Redis with two real ``kalah worker`` processes, one killed
with SIGKILL in the middle of a chunk: the job still completes, every result equal to the
single-position answer computed afresh by an app of its own."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis
from flask.testing import FlaskClient

from kalah_service import create_app
from kalah_service.jobs.redis_layout import TOKENS, WORKERS, JobKeys

ROOT = Path(__file__).resolve().parents[2]
VOLATILE = ("cached", "nodes", "time_ms", "pv")
"""What may differ between two computations of one answer: where it came from, the work, and
which of several optimal lines the principal variation follows (it depends on the engine's
transposition table: a warm worker's and a fresh engine's differ, as two API workers' do)."""


def endgame_positions(count: int, seed: int = 6) -> list[dict[str, Any]]:
    """Distinct Kalah(6,4) boards with 8-16 seeds left in the houses: exact in milliseconds."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < count:
        left = rng.randint(8, 16)
        cells = [0] * 12
        for _ in range(left):
            cells[rng.randrange(12)] += 1
        if not any(cells[:6]) or not any(cells[6:]):
            continue
        south_store = rng.randint(0, 48 - left)
        board = {
            "south": cells[:6],
            "north": cells[6:],
            "stores": [south_store, 48 - left - south_store],
            "to_move": rng.choice(["south", "north"]),
        }
        key = repr(board)
        if key not in seen:
            seen.add(key)
            out.append({"position": board})
    return out


def start_worker(
    redis_url: str, log: Path, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A ``kalah worker`` on ``redis_url``, returned once it reports alive (a job is refused
    while no worker is)."""
    env = {
        **os.environ,
        "KALAH_REDIS_URL": redis_url,
        "KALAH_EGDB_PATH": "off",
        "KALAH_TT_MB": "16",
        "KALAH_LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "kalah_core.cli", "worker"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wait_alive(redis_url, worker, log)
    return worker


def wait_alive(redis_url: str, worker: subprocess.Popen[bytes], log: Path) -> None:
    """Until ``worker`` beats in the state store (pytest-timeout guards a hang)."""
    states = redis.Redis.from_url(redis_url)
    while not any(
        name.decode().endswith(f":{worker.pid}") for name in states.zrange(WORKERS, 0, -1)
    ):
        assert worker.poll() is None, log.read_text()
        time.sleep(0.05)


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in VOLATILE}


def test_batch_survives_a_worker_killed_mid_chunk(
    redis_server: Any, client: FlaskClient, tmp_path: Path
) -> None:
    redis_server.flush()
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": redis_server.url})
    api = app.test_client()
    items = endgame_positions(1000)
    body = {"positions": items, "rules": "kalah", "limits": {"time_ms": 1000}}
    workers = [start_worker(redis_server.url, tmp_path / f"worker{i}.log") for i in range(2)]
    victim, survivor = workers
    r = redis.Redis.from_url(redis_server.url)
    try:
        key, _ = app.extensions["kalah_auth"].store.create("premium")
        api.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"  # the job's owner reads it
        response = api.post("/v1/batch", json=body, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 202, response.json
        job_id = response.json["id"]
        keys = JobKeys(job_id)

        # Kill the victim while it holds a chunk's lease (it is mid-chunk).
        killed_chunk = None
        while killed_chunk is None and victim.poll() is None:
            for entry, holder in r.hgetall(TOKENS).items():
                if f":{victim.pid}/" in holder.decode():
                    victim.send_signal(signal.SIGKILL)
                    killed_chunk = int(entry.decode().rpartition(":")[2])
                    break
            time.sleep(0.005)
        assert killed_chunk is not None, "the victim never took a chunk"
        victim.wait(10)
        assert r.sismember(keys.done, killed_chunk) == 0, "killed before finishing its chunk"

        status: dict[str, Any] = {}
        while True:  # until the job ends (pytest-timeout guards a hang)
            status = api.get(f"/v1/jobs/{job_id}?limit=1").json
            if status["status"] in ("finished", "failed"):
                break
            assert survivor.poll() is None, (tmp_path / "worker1.log").read_text()
            time.sleep(0.1)
        assert status["status"] == "finished", status
        assert status["progress"] == {"done": 1000, "total": 1000}
        # The killed chunk was taken twice: by the victim and, after its lease lapsed, again.
        assert int(r.hget(keys.attempts, str(killed_chunk)) or 0) >= 2

        results: list[dict[str, Any]] = []
        url: str | None = f"/v1/jobs/{job_id}?limit=1000"
        while url:
            page = api.get(url).json
            results += page["results"]
            url = page["next"]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
                worker.wait(10)

    assert len(results) == 1000
    # Every result equals the single-position answer, computed afresh without Redis.
    for item, result in zip(items, results, strict=True):
        assert result is not None and result["exact"] is True
        single = client.post(
            "/v1/analysis",
            json={"position": item["position"], "rules": "kalah", "limits": {"time_ms": 1000}},
        ).json
        assert single["cached"] is False
        assert stable(result) == stable(single)
        assert result["pv"][0][0] in single["best_moves"]
