"""Issue 33, findings 6 and 8, against a real gunicorn and real Redis servers.

6. With the optional cache Redis killed, answers were still served but ``/readyz`` gave a 503,
   so the Kubernetes readiness probe took every pod out. Readiness now depends on what must
   work (the engine and the state store); the cache only degrades it (a 200 saying so).
8. ``/readyz`` showed the answer store's path and, during an outage, ``ConnectionError: Error
   111 connecting to 127.0.0.1:…``; ``/v1/rules`` showed absolute database paths; ``/metrics``
   was public. Paths and exception text now stay in the log, and ``/metrics`` is served only
   to ``KALAH_METRICS_ALLOW`` (loopback by default).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from harness import Gunicorn, RedisServer, free_port

from kalah_core import Rules, egdb
from kalah_service.jobs.redis_jobs import RedisJobStore
from kalah_service.jobs.runner import beating

SMALL = {"position": "start", "houses": 3, "seeds": 3}


def leaks(text: str, *secrets: str) -> list[str]:
    """What in ``text`` gives away the server's internals: any of ``secrets`` (paths,
    ports), a loopback address or an exception's text."""
    found = [s for s in secrets if s and s in text]
    found += [s for s in ("127.0.0.1", "Error 111", "ConnectionError", "Traceback") if s in text]
    return found


@pytest.fixture
def two_redis() -> Iterator[tuple[RedisServer, RedisServer]]:
    """The deployment's two Redis: the answer cache (may be lost) and the state store."""
    with RedisServer(free_port()) as cache, RedisServer(free_port()) as state:
        yield cache, state


def test_readyz_is_degraded_not_unready_without_the_cache_redis(
    two_redis: tuple[RedisServer, RedisServer],
) -> None:
    cache, state = two_redis
    server = Gunicorn(
        {
            "KALAH_REDIS_URL": cache.url,
            "KALAH_STATE_REDIS_URL": state.url,
            "KALAH_REDIS_TIMEOUT_S": "0.2",
            "KALAH_EGDB_PATH": "off",
        },
        workers=1,
    )
    # A batch worker reports alive: without one, jobs would degrade readiness too.
    worker = contextlib.ExitStack()
    worker.enter_context(beating(RedisJobStore(state.url, ttl_s=600), "a worker", 1.0))
    base = server.start(ready=True)
    try:
        before = requests.get(base + "/readyz", timeout=30)
        assert before.status_code == 200, before.text  # (degraded: no kalah worker runs)
        assert before.json()["checks"]["cache"]["ok"] and before.json()["checks"]["state"]["ok"]
        cache.stop()  # killed: its port refuses connections
        ready = requests.get(base + "/readyz", timeout=30)
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["status"] == "degraded" and body["backend"] == "redis"
        assert body["checks"]["cache"]["ok"] is False
        assert body["checks"]["state"]["ok"] is True and body["checks"]["engine"]["ok"] is True
        assert leaks(ready.text, str(cache.port)) == [], ready.text
        answer = requests.get(base + "/v1/analysis", params=SMALL, timeout=60)
        assert answer.status_code == 200 and answer.json()["exact"] is True

        state.stop()  # what must work is gone: not ready
        unready = requests.get(base + "/readyz", timeout=30)
        assert unready.status_code == 503 and unready.headers["Retry-After"] == "1"
        problem = unready.json()
        assert problem["type"] == "/problems/not-ready" and "state" in problem["detail"]
        assert problem["checks"]["state"]["ok"] is False
        assert leaks(unready.text, str(cache.port), str(state.port)) == [], unready.text
        log = server.tail(20000)
        assert "state store is unreachable: ConnectionError" in log  # the log has the error
    finally:
        server.close()
        worker.close()


def test_readyz_and_rules_show_no_paths(tmp_path: Path) -> None:
    folder = tmp_path / "secret-databases"
    database = egdb.default_path(Rules(houses=3), 6, folder)
    egdb.build(database, Rules(houses=3), 6, progress=False)
    store = tmp_path / "secret-answers"
    server = Gunicorn(
        {"KALAH_REDIS_URL": "", "KALAH_CACHE_DIR": str(store), "KALAH_EGDB_PATH": str(folder)},
        workers=1,
    )
    base = server.start(ready=True)
    try:
        ready = requests.get(base + "/readyz", timeout=30)
        assert ready.json()["checks"]["cache"]["ok"] is True
        rules = requests.get(base + "/v1/rules", timeout=30)
        attached = rules.json()["databases"]["attached"]
        assert attached and attached[0]["path"] == database.name
        assert rules.json()["databases"]["setting"] == "paths"
        for text in (ready.text, rules.text):
            assert leaks(text, str(tmp_path), "secret-", os.sep + "tmp") == [], text
    finally:
        server.close()


@pytest.fixture(scope="module")
def embedded() -> Iterator[Gunicorn]:
    server = Gunicorn({"KALAH_REDIS_URL": "", "KALAH_EGDB_PATH": "off"}, workers=1)
    server.start()
    try:
        yield server
    finally:
        server.close()


def test_metrics_are_served_to_loopback(embedded: Gunicorn) -> None:
    answer = requests.get(embedded.base + "/metrics", timeout=30)
    assert answer.status_code == 200 and "kalah_http_requests" in answer.text


@pytest.mark.parametrize("forwarded", ["203.0.113.9", "127.0.0.1, 203.0.113.9"])
def test_metrics_are_refused_to_anyone_else(embedded: Gunicorn, forwarded: str) -> None:
    """A request forwarded for a public address (through a proxy on loopback) is refused."""
    answer = requests.get(
        embedded.base + "/metrics", headers={"X-Forwarded-For": forwarded}, timeout=30
    )
    assert answer.status_code == 403, answer.text[:200]
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert "KALAH_METRICS_ALLOW" in json.loads(answer.text)["detail"]


def test_metrics_allow_names_the_networks() -> None:
    server = Gunicorn(
        {"KALAH_REDIS_URL": "", "KALAH_EGDB_PATH": "off", "KALAH_METRICS_ALLOW": "10.0.0.0/8"},
        workers=1,
    )
    base = server.start()
    try:
        assert requests.get(base + "/metrics", timeout=30).status_code == 403
        assert requests.get(base + "/livez", timeout=30).status_code == 200
    finally:
        server.close()
