"""Finding 11: with no batch worker running, jobs stayed queued forever while ``/readyz`` said
200 ``ready``. Workers now beat in the state store (a real redis-server, a real ``kalah
worker``): without one alive, ``/readyz`` is ``degraded`` with the ``jobs`` check saying why,
and a queued job's answer carries a ``warning``; both clear once a worker runs."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from conftest import RedisServer
from figures import measured
from test_batch_workers import endgame_positions, start_worker

from api import create_app
from api.batch.jobs import WORKER_STALE_S, WORKERS

pytestmark = pytest.mark.system


def test_readiness_and_the_job_say_when_no_worker_runs(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    redis_server.flush()
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": redis_server.url})
    client = app.test_client()
    key, _ = app.extensions["kalah_auth"].store.create("premium")
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"

    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json
    assert ready.json["status"] == "degraded" and ready.json["checks"]["jobs"]["ok"] is False
    assert "no batch worker" in ready.json["checks"]["jobs"]["detail"]
    body = {"positions": endgame_positions(40, seed=51), "limits": {"time_ms": 100}}
    posted = client.post("/v1/batch", json=body)
    assert posted.status_code == 202, posted.json
    assert "no batch worker" in posted.json["warning"]
    job = f"/v1/jobs/{posted.json['id']}?limit=1"
    queued: Any = client.get(job).json
    assert queued["status"] == "queued" and "no batch worker" in queued["warning"]
    degraded_detail = client.get("/readyz").json["checks"]["jobs"]["detail"]

    worker = start_worker(redis_server.url, tmp_path / "worker.log")
    try:
        deadline = time.monotonic() + 60
        while (status := client.get(job).json)["status"] != "finished":
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.1)
        assert status["warning"] is None
        ready = client.get("/readyz")
        assert ready.json["status"] == "ready" and ready.json["checks"]["jobs"]["ok"] is True
        ready_detail = ready.json["checks"]["jobs"]["detail"]
    finally:
        worker.send_signal(signal.SIGTERM)  # a clean stop leaves the set at once
        worker.wait(20)
    after = client.get("/readyz").json
    measured(
        f"no batch worker: /readyz 200 {after['status']} ({degraded_detail!r}); the queued "
        f"job's warning {queued['warning']!r}; with a worker: ready ({ready_detail!r})"
    )
    assert after["status"] == "degraded"

    # A worker killed without a word stops counting once its beats are stale.
    now_ms = int(time.time() * 1000)
    states = redis.Redis.from_url(redis_server.url)
    states.zadd(WORKERS, {"killed:1": now_ms - int(WORKER_STALE_S * 1000) - 1000})
    assert client.get("/readyz").json["status"] == "degraded"
    states.zadd(WORKERS, {"killed:1": now_ms})
    assert client.get("/readyz").json["status"] == "ready"
