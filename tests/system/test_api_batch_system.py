"""The system tests of tests/service/test_api_batch.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
import threading
from typing import Any

from flask import Flask
from test_api_batch import SMALL, post, run_burst_worker, small_positions

from kalah_service import create_app
from kalah_service.base.config import load_settings
from kalah_service.jobs import runner
from kalah_service.jobs.items import parse_batch
from kalah_service.jobs.redis_jobs import RedisJobStore
from kalah_service.jobs.redis_layout import LEASES, JobKeys
from kalah_service.jobs.store import MAX_ATTEMPTS, MAX_UNFINISHED_JOBS, Completed


def test_batch_bodies_may_exceed_the_64k_of_other_endpoints() -> None:
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": "", "KALAH_BATCH_INLINE_MAX": 3000})
    client = app.test_client()
    items = [{"position": "start"}] * 3000  # ~70 KB
    body = {"positions": items, "rules": SMALL, "limits": {"time_ms": 1}}
    assert len(json.dumps(body)) > 64 * 1024
    assert post(client, body).status_code == 200
    huge = json.dumps({"positions": [{"position": "start"}] * 200_000})
    too_big = client.post("/v1/batch", data=huge, content_type="application/json")
    assert too_big.status_code == 413 and too_big.json["max"] == 4 * 1024 * 1024
    analysis = client.post("/v1/analysis", data=huge[:100_000], content_type="application/json")
    assert analysis.status_code == 413 and analysis.json["max"] == 64 * 1024


def test_a_job_needs_an_api_key(redis_app: Flask) -> None:
    client = redis_app.test_client()
    body = {"positions": small_positions(60), "rules": SMALL, "limits": {"time_ms": 100}}
    response = post(client, body)
    assert response.status_code == 401
    assert response.json["type"] == "/problems/key-required"
    bad = client.post("/v1/batch", json=body, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401
    # A small batch is answered inline, key or not.
    assert post(client, {"positions": small_positions(3), "rules": SMALL}).status_code == 200


def test_job_lifecycle_paging_and_ndjson(redis_app: Flask, redis_server: Any) -> None:
    client = redis_app.test_client()
    key, _ = redis_app.extensions["kalah_auth"].store.create("standard")
    redis_app.extensions["kalah_jobs"].beat("a worker about to start")  # else a 503
    positions = [*small_positions(60), {"position": "bad"}, *small_positions(5)]
    response = client.post(
        "/v1/batch",
        json={"positions": positions, "rules": SMALL, "limits": {"time_ms": 100}},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 202, response.json
    location = response.headers["Location"]
    assert location == f"/v1/jobs/{response.json['id']}" == response.json["location"]
    # Only the key that posted the job reads it: another key and anonymous callers get a 404.
    other, _ = redis_app.extensions["kalah_auth"].store.create("premium")
    assert client.get(location, headers={"Authorization": f"Bearer {other}"}).status_code == 404
    assert client.get(location).status_code == 404
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"  # the owner from here on
    queued = client.get(location).json
    assert queued["status"] == "queued"
    assert queued["progress"] == {"done": 1, "total": 66}  # the bad item is answered at once
    assert (
        queued["results"][0] is None and queued["results"][60]["field"] == "positions.60.position"
    )

    run_burst_worker(redis_server.url)

    first = client.get(location + "?limit=25").json
    assert first["status"] == "finished" and first["progress"] == {"done": 66, "total": 66}
    assert first["next"] == f"{location}?offset=25&limit=25"
    pages = first["results"]
    url = first["next"]
    while url:
        page = client.get(url).json
        pages += page["results"]
        url = page["next"]
    assert len(pages) == 66
    assert [p.get("position") for p in pages[:3]] == [
        "012-0-101-0-s",
        "112-1-101-0-s",
        "212-2-101-0-s",
    ]
    assert [p["cached"] for p in pages[61:]] == [True] * 5, "repeats of items 0-4"
    for item, answer in zip(positions[:60], pages[:60], strict=True):
        single = client.post(
            "/v1/analysis", json={**item, "rules": SMALL, "limits": {"time_ms": 100}}
        ).json
        assert single == {**answer, "cached": True}

    stream = client.get(location + "?offset=58", headers={"Accept": "application/x-ndjson"})
    assert stream.headers["Content-Type"] == "application/x-ndjson"
    assert stream.headers["Kalah-Job-Status"] == "finished"
    assert stream.headers["Kalah-Job-Progress"] == "66/66"
    lines = [json.loads(line) for line in stream.data.decode().splitlines()]
    assert lines == pages[58:]

    for limit in ("0", "-1", "1001"):  # pages of 1 to 1000, in JSON and NDJSON alike
        for accept in ("application/json", "application/x-ndjson"):
            refused = client.get(location + "?limit=" + limit, headers={"Accept": accept})
            assert (refused.status_code, refused.json["field"]) == (422, "limit")
    assert client.get("/v1/jobs/" + "f" * 32).status_code == 404


def test_a_lapsed_lease_is_taken_again_first_and_its_item_in_hand_fails_alone(
    redis_server: Any,
) -> None:
    """A chunk whose lease lapsed is taken again first, without the tasks answered already;
    lost MAX_ATTEMPTS times in a row, its task in hand (the first unanswered one) gets a
    problem and the chunk goes on with the others (issue 47: it failed the whole job)."""
    redis_server.flush()
    settings = load_settings({"KALAH_REDIS_URL": redis_server.url}, environ={})
    store = RedisJobStore(redis_server.url, ttl_s=600)
    batch = parse_batch(settings, small_positions(5), SMALL, {"time_ms": 100})
    job = store.create(batch, chunk_size=3, owner="k1")  # two chunks
    keys = JobKeys(job.id)
    lease = store.take("dead-worker")
    assert lease is not None and (lease.job_id, lease.chunk, lease.attempt) == (job.id, 0, 1)
    assert store.renew(lease), "a live lease is renewed"
    first, in_hand, last = (index for index, _ in lease.tasks)
    assert not store.complete(lease, Completed([(first, b'{"x":1}')], whole=False, more=True))
    second = store.take("w2")
    assert second is not None and second.chunk == 1, "a leased chunk is left alone"
    assert store.take("w3") is None, "nothing else waits"
    for attempt in range(2, MAX_ATTEMPTS + 2):
        store.redis.zadd(LEASES, {keys.entry(0): 0})  # the worker died: its lease lapsed
        again = store.take(f"worker-{attempt}")
        assert again is not None and again.chunk == 0
        assert not store.renew(lease), "the dead worker's lease went to another"
        if attempt <= MAX_ATTEMPTS:
            assert again.attempt == attempt
            assert [t for t, _ in again.tasks] == [in_hand, last], "the answered one skipped"
        else:
            assert again.attempt == 1, "the chunk goes on"
            assert [t for t, _ in again.tasks] == [last], "without its poisoned task"
        lease = again
    status = store.status(job.id)
    assert status is not None and (status.status, status.done) == ("running", 2)
    problem = json.loads(store.results(job.id, in_hand, 1)[0])
    assert problem["type"] == "/problems/internal-error"
    assert f"{MAX_ATTEMPTS} times" in problem["detail"]
    assert store.complete(lease, Completed([(last, b'{"x":3}')]))
    assert store.complete(second, Completed([(t, b"{}") for t, _ in second.tasks]))
    status = store.status(job.id)
    assert status is not None and (status.status, status.done) == ("finished", 5)


def test_a_chunk_run_twice_counts_once(redis_server: Any) -> None:
    redis_server.flush()
    settings = load_settings({"KALAH_REDIS_URL": redis_server.url}, environ={})
    store = RedisJobStore(redis_server.url, ttl_s=600)
    batch = parse_batch(settings, small_positions(2), SMALL, {"time_ms": 100})
    job = store.create(batch, chunk_size=10, owner="k1")
    lease = store.take("a")
    assert lease is not None
    assert store.complete(lease, Completed([(0, b'{"cached":false,"x":1}'), (1, b"{}")]))
    assert not store.complete(lease, Completed([(0, b'{"cached":false,"x":1}'), (1, b"{}")]))
    status = store.status(job.id)
    assert status is not None and (status.status, status.done) == ("finished", 2)
    assert store.results(job.id, 0, 1) == [b'{"cached":false,"x":1}']
    assert store.take("b") is None
    assert not store.pending()


def test_a_caller_has_at_most_a_few_jobs_unfinished(redis_app: Flask) -> None:
    """With jobs no longer paid up front, the number a caller keeps queued or running is
    bounded: one more is a 429 (charged nothing) until one ends; a cancelled one frees it."""
    client = redis_app.test_client()
    key, _ = redis_app.extensions["kalah_auth"].store.create("premium")
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    redis_app.extensions["kalah_jobs"].beat("a worker that takes nothing")
    body = {"positions": small_positions(20), "rules": SMALL, "limits": {"time_ms": 100}}
    jobs = [post(client, body) for _ in range(MAX_UNFINISHED_JOBS)]
    assert [job.status_code for job in jobs] == [202] * MAX_UNFINISHED_JOBS
    refused = post(client, body)
    assert refused.status_code == 429 and refused.json["max"] == MAX_UNFINISHED_JOBS
    assert refused.headers["Kalah-Cost"] == "0" and "Retry-After" in refused.headers
    other, _ = redis_app.extensions["kalah_auth"].store.create("premium")
    assert (
        client.post("/v1/batch", json=body, headers={"Authorization": f"Bearer {other}"})
    ).status_code == 202, "another caller is not held back"
    assert client.delete(jobs[0].headers["Location"]).json["status"] == "cancelled"
    assert post(client, body).status_code == 202


def test_items_whose_analysis_raises_get_problems_and_the_runner_goes_on(
    redis_server: Any,
) -> None:
    """A runner whose analysis raises something that is neither a problem nor the store's
    gives each such item a problem (issue 47: the chunk's lease lapsed, it was taken again,
    and after MAX_ATTEMPTS the job failed); the runner itself goes on (and, in a burst, stops
    when idle)."""
    redis_server.flush()
    settings = load_settings({"KALAH_REDIS_URL": redis_server.url}, environ={})
    store = RedisJobStore(redis_server.url, ttl_s=600)
    job = store.create(parse_batch(settings, small_positions(3), SMALL), 10, owner="k1")

    class Broken:
        def analyse(self, request: Any) -> Any:
            raise RuntimeError("a bug")

    runner.serve(store, Broken(), worker="w", stop=threading.Event(), burst=True)  # type: ignore[arg-type]
    status = store.status(job.id)
    assert status is not None and (status.status, status.done) == ("finished", 3), status
    for body in store.results(job.id, 0, 3):
        assert json.loads(body)["type"] == "/problems/internal-error"
