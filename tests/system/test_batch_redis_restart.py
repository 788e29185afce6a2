"""A batch job on a Redis that restarts in the middle of it (an append-only file keeps its
data, as a production Redis for jobs should): the worker rides out the outage and the job
completes with every result, none lost, each equal to the single-position answer."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from harness import RedisServer, free_port
from test_batch_workers import endgame_positions, stable, start_worker

from kalah_service import create_app


@pytest.fixture
def persistent_redis() -> Iterator[RedisServer]:
    server = RedisServer(free_port(), persistent=True)
    server.start()
    try:
        yield server
    finally:
        server.close()


def test_a_job_survives_a_redis_restart(
    persistent_redis: RedisServer, client: FlaskClient, tmp_path: Path
) -> None:
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": persistent_redis.url})
    api = app.test_client()
    # 400 items of 1 s cost 4,401 units: a premium key's bucket holds them
    key, _ = app.extensions["kalah_auth"].store.create("premium")
    api.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"  # the job's owner reads it
    items = endgame_positions(400, seed=9)
    body = {"positions": items, "rules": "kalah", "limits": {"time_ms": 1000}}
    log = tmp_path / "worker.log"
    worker = start_worker(persistent_redis.url, log)
    try:
        response = api.post("/v1/batch", json=body, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 202, response.json
        location = response.headers["Location"]
        while api.get(location + "?limit=1").json["progress"]["done"] == 0:
            time.sleep(0.05)
        persistent_redis.stop()
        time.sleep(2)
        persistent_redis.start()
        while True:
            status = api.get(location + "?limit=1").json
            if status["status"] in ("finished", "failed"):
                break
            time.sleep(0.2)
        assert status["status"] == "finished", status
        assert status["progress"] == {"done": 400, "total": 400}
        assert worker.poll() is None, log.read_text()[-2000:]
    finally:
        worker.terminate()
        worker.wait(10)
    results = [
        line
        for line in api.get(location, headers={"Accept": "application/x-ndjson"})
        .get_data(as_text=True)
        .splitlines()
    ]
    assert len(results) == 400
    for item, line in zip(items, results, strict=True):
        single = client.post("/v1/analysis", json={**item, "limits": {"time_ms": 1000}}).json
        assert stable(json.loads(line)) == stable(single)
