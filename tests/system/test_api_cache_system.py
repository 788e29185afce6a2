"""The system tests of tests/service/test_api_cache.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from flask import Flask
from test_api_cache import MIDGAME, SMALL, analyse, count_searches, keys_of, redis_client

from kalah_core import Position, Rules, book, deepbook
from kalah_service import create_app
from kalah_service.core.analyser import Analyser
from kalah_service.core.request import AnalysisRequest, Limits
from kalah_service.stores.answers import Entry, Keys
from kalah_service.stores.redis_answers import RedisStore

if TYPE_CHECKING:
    from harness import RedisServer


def test_second_request_is_a_cache_hit_from_redis(
    redis_app: Flask, redis_server: RedisServer
) -> None:
    first = analyse(redis_app, f"position=start&{SMALL}").get_json()
    second = analyse(redis_app, f"position=start&{SMALL}").get_json()
    assert (first["cached"], second["cached"]) == (False, True)
    # Another app (another worker) has an empty memory: its hit comes from Redis.
    other = create_app({"TESTING": True, "KALAH_REDIS_URL": redis_server.url})
    third = analyse(other, f"position=start&{SMALL}").get_json()
    assert third == second
    keys = keys_of(redis_app, Rules(houses=3, seeds=3), "333-0-333-0-s", Limits(1000))
    client = redis_client(redis_server)
    assert client.ttl(keys.exact) == -1, "exact results never expire"
    assert client.get(keys.exact).startswith(b"E|")


def test_etag_and_304_with_redis(redis_app: Flask) -> None:
    analyse(redis_app, f"position={MIDGAME}&time_ms=5000")
    response = analyse(redis_app, f"position={MIDGAME}&time_ms=5000")
    assert response.get_json()["cached"] is True
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert (
        analyse(
            redis_app,
            f"position={MIDGAME}&time_ms=5000",
            **{"If-None-Match": response.headers["ETag"]},
        ).status_code
        == 304
    )


def test_heuristic_results_expire_and_only_deeper_ones_replace_them(
    redis_app: Flask, redis_server: RedisServer
) -> None:
    answer = analyse(redis_app, "position=start&depth=3").get_json()
    assert answer["exact"] is False
    keys = keys_of(redis_app, Rules(), "444444-0-444444-0-s", Limits(1000, 3))
    client = redis_client(redis_server)
    assert 0 < client.ttl(keys.limits) <= 3600
    cache = redis_app.extensions["kalah"].cache
    stored = Entry.decode(client.get(keys.limits))
    cache.put(keys, Entry(b'{"shallower":1}', False, stored.depth - 1))
    assert client.get(keys.limits) == stored.encode(), (
        "a shallower result does not replace a deeper one"
    )
    cache.put(keys, Entry(b'{"deeper":1}', False, stored.depth + 1))
    assert Entry.decode(client.get(keys.limits)).body == b'{"deeper":1}'


def test_concurrent_requests_compute_once(redis_server: RedisServer) -> None:
    """Four workers (apps sharing Redis), three requests each, one uncached key: one search."""
    redis_server.flush()
    apps = [create_app({"TESTING": True, "KALAH_REDIS_URL": redis_server.url}) for _ in range(4)]
    counters = [count_searches(app) for app in apps]
    with ThreadPoolExecutor(12) as pool:
        answers = list(
            pool.map(
                lambda i: analyse(apps[i % 4], f"position={MIDGAME}&time_ms=3000").get_json(),
                range(12),
            )
        )
    assert sum(len(c) for c in counters) == 1
    assert sorted(a["cached"] for a in answers) == [False] + [True] * 11
    assert len({a["value"] for a in answers}) == 1


def test_a_dead_lock_holder_does_not_block(redis_app: Flask, redis_server: RedisServer) -> None:
    """A lock left by a worker that died elsewhere: the request waits for the lease (or its
    own wait), then computes."""
    keys = keys_of(redis_app, Rules(houses=3, seeds=3), "333-0-333-0-s", Limits(100))
    client = redis_client(redis_server)
    client.set(keys.lock, "dead-worker", px=400)
    analyser: Analyser = redis_app.extensions["kalah"]
    search = analyser.search
    holders: list[bytes | None] = []

    def watched(*args: Any, **kwargs: Any) -> Any:
        holders.append(client.get(keys.lock))  # who holds the lock while the search runs
        return search(*args, **kwargs)

    analyser.search = watched  # type: ignore[method-assign]
    answer = analyse(redis_app, f"position=start&{SMALL}&time_ms=100").get_json()
    assert answer["cached"] is False and answer["position"] == "333-0-333-0-s"
    assert holders and b"dead-worker" not in holders, "it waited while the lock was held"


def test_redis_down_then_back(own_redis: RedisServer) -> None:
    # The cache alone: its Redis holds the rate limits too, and limited requests are 503s
    # while they cannot be counted (tests/service/test_api_limits.py).
    app = create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": own_redis.url,
            "KALAH_REDIS_TIMEOUT_S": 0.2,
            "KALAH_LIMITS": "off",
        }
    )
    client = app.test_client()
    assert client.get("/readyz").status_code == 200
    expected = analyse(app, f"position=start&{SMALL}").get_json()

    own_redis.stop()
    for position in (
        "start",
        "start",
        "222-0-222-0-s",
        "222-0-222-0-s",
    ):  # hits from memory, then misses
        seeds = 2 if position.startswith("2") else 3
        response = analyse(app, f"position={position}&houses=3&seeds={seeds}")
        assert response.status_code == 200
        if seeds == 3:
            assert response.get_json()["value"] == expected["value"]
    assert analyse(app, "position=111-0-111-0-s&houses=3&seeds=1").get_json()["cached"] is False
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.mimetype == "application/problem+json"
    problem = ready.get_json()
    assert problem["status"] == 503 and problem["type"] == "/problems/not-ready"
    assert problem["checks"]["cache"]["ok"] is False and problem["checks"]["engine"]["ok"] is True
    assert client.get("/livez").status_code == 200

    own_redis.start()  # same port, empty
    while client.get("/readyz").status_code != 200:
        time.sleep(0.1)
    query = f"position={MIDGAME}&time_ms=5000"
    assert analyse(app, query).get_json()["cached"] is False
    assert analyse(app, query).get_json()["cached"] is True
    other = create_app({"TESTING": True, "KALAH_REDIS_URL": own_redis.url})
    assert analyse(other, query).get_json()["cached"] is True, "the result went to Redis again"


def test_redis_recovers_without_a_health_check(own_redis: RedisServer) -> None:
    """Requests alone reconnect (after the short back-off): no permanent failure state."""
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": own_redis.url, "KALAH_LIMITS": "off"})
    own_redis.stop()
    assert analyse(app, f"position=start&{SMALL}").status_code == 200
    own_redis.start()
    time.sleep(RedisStore.BACKOFF_S + 0.1)
    analyse(app, "position=start&houses=2&seeds=2")
    other = create_app({"TESTING": True, "KALAH_REDIS_URL": own_redis.url})
    assert analyse(other, "position=start&houses=2&seeds=2").get_json()["cached"] is True


def test_lock_released_after_compute(redis_app: Flask, redis_server: RedisServer) -> None:
    analyse(redis_app, f"position=start&{SMALL}")
    client = redis_client(redis_server)
    assert not [k for k in client.scan_iter("*:lock")]


def test_inexact_answers_are_keyed_on_the_book_and_database_proven_ones_are_not(
    redis_app: Flask,
) -> None:
    """A new book (or deep book) or a database attached later can prove what an earlier search
    could not: the keys of answers for limits name them, the key of proven answers none."""
    request = AnalysisRequest(Position.start(Rules()), Rules(), Limits(1000))
    before = Keys.of("eng-1", request.key, request.exact_key, "book-aaa.egdb-1")
    after = Keys.of("eng-1", request.key, request.exact_key, "book-aaa.egdb24")
    assert before.exact == after.exact
    assert before.limits != after.limits and before.lock != after.lock
    used = keys_of(redis_app, Rules(), "444444-0-444444-0-s", Limits(1000))
    assert f"book-{book.shipped_digest()}.deep-{deepbook.shipped_digest()}.egdb" in used.limits
    assert "book-" not in used.exact
