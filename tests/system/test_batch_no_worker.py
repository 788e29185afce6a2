"""Finding 11 (and issue 33.13): with no batch worker running, jobs were accepted (202),
charged, and stayed queued forever while ``/readyz`` said 200. Workers beat in the state store
(a real redis-server, a real ``kalah worker``): without one alive, ``/readyz`` is ``degraded``
(200: analyses are still served) with the ``jobs`` check saying why, and a new job is refused
with a 503 problem saying why, charged nothing; a job whose workers went away meanwhile
carries a ``warning``. All of it clears once a worker runs."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import redis
from figures import measured
from harness import RedisServer
from test_batch_workers import endgame_positions, start_worker

from kalah_service import create_app
from kalah_service.jobs.redis_jobs import WORKER_STALE_S
from kalah_service.jobs.redis_layout import WORKERS


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
    refused = client.post("/v1/batch", json=body)
    assert refused.status_code == 503, refused.json
    assert refused.headers["Content-Type"] == "application/problem+json"
    assert "no batch worker" in refused.json["detail"] and "Retry-After" in refused.headers
    assert refused.headers["Kalah-Cost"] == "0", "nothing charged for a 503"
    degraded_detail = client.get("/readyz").json["checks"]["jobs"]["detail"]

    worker = start_worker(redis_server.url, tmp_path / "worker.log")
    try:
        while client.get("/readyz").json["status"] != "ready":
            time.sleep(0.1)
        posted = client.post("/v1/batch", json=body)
        assert posted.status_code == 202, posted.json
        job = f"/v1/jobs/{posted.json['id']}?limit=1"
        while (status := client.get(job).json)["status"] != "finished":
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
        f"no batch worker: /readyz 200 {after['status']} ({degraded_detail!r}); a new job: "
        f"503 {refused.json['detail']!r}, cost 0; with a worker: ready ({ready_detail!r})"
    )
    assert after["status"] == "degraded"

    # A worker killed without a word stops counting once its beats are stale.
    now_ms = int(time.time() * 1000)
    states = redis.Redis.from_url(redis_server.url)
    states.zadd(WORKERS, {"killed:1": now_ms - int(WORKER_STALE_S * 1000) - 1000})
    assert client.get("/readyz").json["status"] == "degraded"
    states.zadd(WORKERS, {"killed:1": now_ms})
    assert client.get("/readyz").json["status"] == "ready"
