"""The system tests of tests/service/test_api_store_faults.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests
from harness import Gunicorn, RedisServer, free_port
from test_api_store_faults import (
    JOB_ID,
    assert_503,
    assert_served_and_charged,
    corrupt,
    embedded_app,
    fill,
    job_body,
    not_ready,
    out_of_memory,
    tmpfs,
    uncached,
)

from kalah_service import create_app
from kalah_service.stores.keys import PREFIX as KEY_PREFIX
from kalah_service.stores.keys import digest
from kalah_service.stores.redis_keys import RedisKeyStore


def test_a_full_answer_store_still_answers_and_charges(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "answers") as disk:  # only the answers on it
        client = embedded_app(tmp_path).test_client()
        assert client.get("/v1/analysis", query_string=uncached(3)).status_code == 200
        fill(disk)
        assert_served_and_charged(client.get("/v1/analysis", query_string=uncached(4)))
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.get_json()["status"] == "degraded"
        assert ready.get_json()["checks"]["cache"]["ok"] is False


def test_a_full_disk_is_a_503_for_jobs_and_limits(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk") as disk:  # the answers, the jobs and the limits on it
        unlimited = embedded_app(disk, KALAH_LIMITS="off").test_client()
        limited = embedded_app(disk).test_client()
        for client in (unlimited, limited):  # every store opened and written before
            assert client.get("/v1/analysis", query_string=uncached(5)).status_code == 200
            assert client.get(f"/v1/jobs/{JOB_ID}").status_code == 404
        fill(disk)
        served = unlimited.get("/v1/analysis", query_string=uncached(6))  # limits off: free
        assert served.status_code == 200 and served.get_json()["cached"] is False
        assert_503(unlimited.post("/v1/batch", json=job_body()), "job store")
        assert not_ready(unlimited.get("/readyz")) == {"jobs", "cache"}
        assert_503(limited.get("/v1/analysis", query_string=uncached(7)), "rate limits")
        assert not_ready(limited.get("/readyz")) == {"jobs", "limits", "cache"}


@pytest.fixture
def cache_and_state() -> Iterator[tuple[RedisServer, RedisServer]]:
    with RedisServer(free_port()) as cache, RedisServer(free_port()) as state:
        yield cache, state


def test_redis_that_answers_errors(cache_and_state: tuple[RedisServer, RedisServer]) -> None:
    cache, state = cache_and_state
    app = create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": cache.url,
            "KALAH_STATE_REDIS_URL": state.url,
            "KALAH_EGDB_PATH": "off",
            "KALAH_BATCH_INLINE_MAX": 1,
        }
    )
    key, _ = RedisKeyStore(state.url, timeout_s=2).create("standard")
    auth = {"Authorization": f"Bearer {key}"}
    client = app.test_client()
    out_of_memory(cache)  # the optional cache
    assert_served_and_charged(client.get("/v1/analysis", query_string=uncached(8), headers=auth))
    ready = client.get("/readyz")
    assert ready.get_json()["checks"]["cache"]["ok"] is False
    assert ready.get_json()["checks"]["limits"]["ok"] is True
    out_of_memory(state)  # the jobs and the limits
    query = uncached(9)
    assert_503(client.get("/v1/analysis", query_string=query, headers=auth), "rate limits")
    assert_503(client.get(f"/v1/jobs/{JOB_ID}", headers=auth))
    assert not_ready(client.get("/readyz")) == {"cache", "jobs", "limits"}


@pytest.mark.parametrize("damage", ["wrong type", "fields missing"])
def test_a_key_that_cannot_be_checked_is_a_503_where_a_key_is_needed(
    own_redis: RedisServer, damage: str
) -> None:
    app = create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": own_redis.url,
            "KALAH_EGDB_PATH": "off",
            "KALAH_BATCH_INLINE_MAX": 1,
        }
    )
    key, _ = RedisKeyStore(own_redis.url, timeout_s=2).create("standard")
    record = KEY_PREFIX + digest(key)
    raw = redis.Redis.from_url(own_redis.url)
    raw.delete(record)
    if damage == "wrong type":  # the store answers WRONGTYPE errors
        raw.set(record, "garbage")
    else:
        raw.hset(record, mapping={"id": "x"})
    client = app.test_client()
    auth = {"Authorization": f"Bearer {key}"}
    assert_503(client.post("/v1/batch", json=job_body(), headers=auth), "key")
    rules = client.get("/v1/rules", headers=auth)  # public: served as anonymous
    assert rules.status_code == 200


def test_corrupt_stores_through_gunicorn(tmp_path: Path) -> None:
    corrupt(tmp_path / "answers" / "cache.db")
    corrupt(tmp_path / "answers-jobs" / "cache.db")
    server = Gunicorn(
        {
            "KALAH_REDIS_URL": "",
            "KALAH_CACHE_DIR": str(tmp_path / "answers"),
            "KALAH_EGDB_PATH": "off",
            "KALAH_BATCH_INLINE_MAX": "1",
            "KALAH_LIMITS": "on",
        },
        workers=2,
    )
    base = server.start()
    try:
        for n in range(10, 14):  # both workers
            answer = requests.get(base + "/v1/analysis", params=uncached(n), timeout=60)
            assert_served_and_charged(answer)
        assert_503(requests.post(base + "/v1/batch", json=job_body(), timeout=60), "job store")
        ready = requests.get(base + "/readyz", timeout=60)
        assert not_ready(ready) == {"jobs", "cache"}
        assert str(tmp_path) not in ready.text
        limits = tmp_path / "answers-limits.sqlite"
        server.stop()
        corrupt(limits)
        base = server.start()
        for n in range(14, 16):  # a search reserves its budget at once: refused
            answer = requests.get(base + "/v1/analysis", params=uncached(n), timeout=60)
            assert_503(answer, "rate limits")
        assert "limits" in not_ready(requests.get(base + "/readyz", timeout=60))
        assert "Traceback" not in server.tail(100_000)
    finally:
        server.close()
