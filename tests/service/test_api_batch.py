"""``POST /v1/batch`` and ``GET /v1/jobs/{id}`` through the Flask test client: inline batches on
the embedded default, jobs on a real Redis run by a real ``kalah worker --burst``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from kalah_service import create_app

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"houses": 3, "seeds": 2}


def small_positions(count: int) -> list[dict[str, Any]]:
    """``count`` distinct Kalah(3, *) positions, solved in microseconds."""
    return [
        {"position": {"south": [i % 3, 1, 2], "north": [1, (i // 3) % 3, 1], "stores": [i, 0]}}
        for i in range(count)
    ]


def post(client: FlaskClient, body: dict[str, Any]) -> Any:
    return client.post("/v1/batch", json=body)


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its ``cached`` flag."""
    return {k: v for k, v in answer.items() if k != "cached"}


def test_inline_results_in_order_with_per_item_overrides_and_problems(client: FlaskClient) -> None:
    body = {
        "rules": {"houses": 4, "seeds": 2},
        "limits": {"time_ms": 500},
        "positions": [
            {"position": "start"},
            {"position": "start", "rules": SMALL},
            {"position": "1-2"},
            {"position": "start"},
            {"position": "start", "limits": {"time_ms": 10**9}},
        ],
    }
    response = post(client, body)
    assert response.status_code == 200
    results = response.json["results"]
    assert [r.get("position") for r in results] == [
        "2222-0-2222-0-s",
        "222-0-222-0-s",
        None,
        "2222-0-2222-0-s",
        None,
    ]
    assert results[0]["cached"] is False and results[0]["limits"]["time_ms"] == 500
    assert results[3]["cached"] is True, "a repeat is computed once and reported as cached"
    assert results[2]["field"] == "positions.2.position"
    assert results[2]["type"] == "/problems/invalid-notation" and results[2]["status"] == 422
    assert results[4]["field"] == "positions.4.limits.time_ms"
    assert results[4]["type"] == "/problems/limit-exceeded"
    # The same code path and cache keys as POST /v1/analysis: asking it is a hit, same answer.
    single = client.post(
        "/v1/analysis",
        json={"position": "start", "rules": SMALL, "limits": {"time_ms": 500}},
    ).json
    assert single["cached"] is True
    assert single == {**results[1], "cached": True}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "positions"),
        ({"positions": []}, "positions"),
        ({"positions": "start"}, "positions"),
        ({"positions": [{"position": "start"}] * 3 + ["start"]}, "positions.3"),
        ({"positions": [{"position": "start"}] * 3 + [{"position": 7}]}, "positions.3.position"),
        ({"positions": [{}]}, "positions.0.position"),
        ({"positions": [{"position": "start"}], "limits": {"time_ms": 0}}, "limits.time_ms"),
        ({"positions": [{"position": "start"}], "rules": "nope"}, "rules"),
        ({"positions": [{"position": "start"}], "limits": {"time_ms": 10**9}}, "limits.time_ms"),
    ],
)
def test_malformed_batches_are_422_naming_the_field(
    client: FlaskClient, body: dict[str, Any], field: str
) -> None:
    response = post(client, body)
    assert response.status_code == 422, response.json
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json["field"] == field


def test_an_items_own_bad_value_is_a_problem_in_its_slot(client: FlaskClient) -> None:
    # Values are checked by the request type, item by item, like a budget above the maximum.
    body = {"positions": [{"position": "start", "limits": {"time_ms": 0}}]}
    result = post(client, body).json["results"][0]
    assert result["field"] == "positions.0.limits.time_ms"
    assert result["type"] == "/problems/invalid-request"


def test_limits_on_size_and_budget() -> None:
    app = create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": "",
            "KALAH_BATCH_MAX_POSITIONS": 5,
            "KALAH_BATCH_MAX_BUDGET_MS": 1000,
        }
    )
    client = app.test_client()
    too_many = post(client, {"positions": small_positions(6), "rules": SMALL})
    assert too_many.status_code == 422
    assert too_many.json["field"] == "positions" and too_many.json["max"] == 5
    too_long = post(client, {"positions": small_positions(3), "rules": SMALL})  # 3 x 1000 ms
    assert too_long.status_code == 422
    assert too_long.json["field"] == "limits.time_ms" and too_long.json["max"] == 1000
    repeats = post(client, {"positions": [{"position": "start"}] * 5, "rules": SMALL})
    assert repeats.status_code == 200, "repeats cost no budget"


def test_without_redis_a_large_batch_is_a_job_of_the_server(client: FlaskClient) -> None:
    """No queue to run: the app's own process runs the job (gunicorn over HTTP in
    test_api_embedded_http); the results are the single answers, repeats marked cached."""
    positions = small_positions(17)
    for body in (
        {"positions": positions, "rules": SMALL},
        # A batch whose budgets add up to more than KALAH_MAX_TIME_MS is not inline either.
        {"positions": positions[:2], "rules": SMALL, "limits": {"time_ms": 4000}},
    ):
        created = post(client, body)
        assert created.status_code == 202, created.json
        location = created.headers["Location"]
        job: dict[str, Any] = {}
        for _ in range(600):
            job = client.get(location).json
            if job["status"] == "finished":
                break
            time.sleep(0.05)
        assert job["progress"] == {"done": len(body["positions"]), "total": len(body["positions"])}
        for item, result in zip(body["positions"], job["results"], strict=True):
            single = client.post("/v1/analysis", json={"rules": SMALL, **item}).json
            assert stable(result) == stable(single)
    assert client.get("/v1/jobs/" + "0" * 32).status_code == 404


def test_a_servers_job_runner_stops_when_told_and_abandons_its_chunk(client: FlaskClient) -> None:
    """``stop_in_server`` ends the runner threads of this process (an app done with its store:
    a test's) in the middle of a job; the chunk in hand is left to its lease."""
    from kalah_service.jobs.runner import stop_in_server

    positions = [
        {"position": {"south": [4, 4, 4, 4, 4, i], "north": [4, 4, 4, 4, 4, 4], "stores": [0, 0]}}
        for i in range(1, 18)
    ]
    created = post(client, {"positions": positions, "rules": "kalah", "limits": {"time_ms": 300}})
    assert created.status_code == 202, created.json

    def runners() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "embedded-jobs" and t.is_alive()]

    assert runners(), "the job started this process's runner"
    assert stop_in_server() == 0
    assert not runners()
    job = client.get(created.headers["Location"] + "?limit=100").json
    assert job["status"] in {"queued", "running"}, "stopped with the job unfinished"


def run_burst_worker(redis_url: str) -> None:
    env = {
        **os.environ,
        "KALAH_REDIS_URL": redis_url,
        "KALAH_EGDB_PATH": "off",
        "KALAH_TT_MB": "16",
    }
    done = subprocess.run(
        [sys.executable, "-m", "kalah_core.cli", "worker", "--burst"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_without_redis_the_caller_cancels_its_job(client: FlaskClient) -> None:
    """``DELETE /v1/jobs/{id}`` on the embedded store: the job is cancelled for its owner (its
    address here), the running chunk stops, the results so far stay readable."""
    positions = [
        {"position": {"south": [4, 4, 4, 4, 4, i], "north": [4, 4, 4, 4, 4, 4], "stores": [0, 0]}}
        for i in range(1, 18)
    ]
    body = {"positions": positions, "rules": "kalah", "limits": {"time_ms": 300}}
    created = post(client, body)
    assert created.status_code == 202, created.json
    location = created.headers["Location"]
    other = client.delete(location, environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert other.status_code == 404, "another caller's job does not exist for it"
    cancelled = client.delete(location)
    assert cancelled.status_code == 200, cancelled.json
    assert cancelled.json["status"] == "cancelled"
    store = client.application.extensions["kalah_jobs"]
    while store.pending():  # the running chunk stops after its current search
        time.sleep(0.05)
    job = client.get(location + "?limit=100").json
    assert job["status"] == "cancelled" and job["warning"] is None
    answered = [r for r in job["results"] if r is not None]
    assert len(answered) < len(positions)
    assert all(r["position"] for r in answered), "what was answered stays readable"
    assert client.delete(location).json["status"] == "cancelled"
