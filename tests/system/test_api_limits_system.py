"""The system tests of tests/service/test_api_limits.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from test_api_limits import RULES, SMALL, limited, limits_app

from kalah_service import create_app
from kalah_service.ratelimit.buckets import SYNC_S
from kalah_service.stores.keys import digest
from kalah_service.stores.redis_keys import RedisKeyStore

if TYPE_CHECKING:
    from harness import RedisServer


def test_redis_buckets_are_shared_by_apps_and_keys_live_hashed(redis_server: RedisServer) -> None:
    redis_server.flush()
    config = {
        "TESTING": True,
        "KALAH_REDIS_URL": redis_server.url,
        "KALAH_LIMIT_ANONYMOUS": "3/minute",
    }
    apps = create_app(config), create_app(config)
    one, two = (app.test_client() for app in apps)

    def sync() -> None:  # what each worker's thread does every SYNC_S
        for app in apps:
            app.extensions["kalah_limits"].sync()

    assert [one.get(RULES).status_code, two.get(RULES).status_code] == [200, 200]
    sync()
    assert one.get(RULES).status_code == 200
    sync()
    assert two.get(RULES).status_code == 429  # two "workers", one bucket
    time.sleep(3 * SYNC_S)  # the workers' own threads sync too
    assert int(one.get(RULES).headers["RateLimit-Remaining"]) == 0

    store = RedisKeyStore(redis_server.url, timeout_s=1)
    key, info = store.create("standard")
    raw = store.client.hgetall("kalah:key:" + digest(key))
    assert raw[b"tier"] == b"standard" and raw[b"id"] == info.id.encode()
    dump = b"".join(store.client.dump(k) or b"" for k in store.client.keys("kalah:key*"))
    secret = key.split("_", 2)[2]  # kalah_<id>_<secret>; the secret may hold "_" itself
    assert key.encode() not in dump and secret.encode() not in dump
    auth = {"Authorization": f"Bearer {key}"}
    assert one.get(RULES, headers=auth).headers["RateLimit-Limit"] == "1200"
    assert store.revoke(key)
    fresh = create_app(config).test_client()  # (others remember a verified key a few seconds)
    assert fresh.get(RULES, headers=auth).status_code == 401


def test_redis_down_is_a_503_for_limited_requests_until_it_is_back(own_redis: RedisServer) -> None:
    """Limits that cannot be counted are not lifted (docs/deploy.md, "Store faults"): while the
    state Redis is down a limited request is a 503 problem with Retry-After, never a 500, and
    served again by itself once Redis is back."""
    config = {
        "TESTING": True,
        "KALAH_REDIS_URL": own_redis.url,
        "KALAH_LIMIT_ANONYMOUS": "100/minute",
    }
    app = create_app(config)
    client = app.test_client()
    key, _ = app.extensions["kalah_auth"].store.create("standard")
    assert client.get(RULES).status_code == 200
    own_redis.stop()
    try:
        for path in (SMALL, RULES, SMALL):
            response = client.get(path)
            assert response.status_code == 503, response.get_data(as_text=True)
            assert response.get_json()["type"] == "/problems/not-ready"
            assert int(response.headers["Retry-After"]) >= 1
            assert response.headers["Kalah-Cost"] == "0"
        other = create_app({**config, "KALAH_LIMITS": "off"}).test_client()
        # Unlimited: an unverifiable key is served as anonymous, not refused.
        assert other.get(RULES, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    finally:
        own_redis.start()
    while client.get(RULES).status_code != 200:  # tried again after its back-off
        time.sleep(0.05)


def test_keys_cli(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:

    from kalah_core.cli import main

    monkeypatch.setenv("KALAH_REDIS_URL", redis_server.url)
    assert main(["keys", "create", "--tier", "premium", "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert created["tier"] == "premium" and created["key"].startswith("kalah_")
    store = RedisKeyStore(redis_server.url, timeout_s=1)
    assert store.lookup(digest(created["key"])) is not None
    assert main(["keys", "create", "--tier", "gold"]) == 2
    assert main(["keys", "revoke", created["key"]]) == 0
    assert store.lookup(digest(created["key"])) is None
    assert main(["keys", "revoke", created["id"]]) == 1
    capsys.readouterr()
    assert main(["keys", "revoke", "--json", "nope"]) == 1
    assert json.loads(capsys.readouterr().out) == {"revoked": False}
    monkeypatch.setenv("KALAH_REDIS_URL", "")
    assert main(["keys", "create"]) == 2


def test_workers_counting_apart_overdraw_a_bucket_by_little(redis_server: RedisServer) -> None:
    # Two "workers" that count in memory: a fast spender is synced before admission, so
    # together they admit hardly more than the bucket holds, without waiting for a sync.
    redis_server.flush()
    config = {
        "TESTING": True,
        "KALAH_REDIS_URL": redis_server.url,
        "KALAH_LIMIT_ANONYMOUS": "40/minute",
    }
    one, two = create_app(config).test_client(), create_app(config).test_client()
    statuses = [client.get(RULES).status_code for _ in range(50) for client in (one, two)]
    assert 40 <= statuses.count(200) <= 42
    assert statuses.count(429) == len(statuses) - statuses.count(200)


def test_limits_auto_limit_everyone_with_a_state_store(redis_server: RedisServer) -> None:
    redis_server.flush()
    app = limits_app(None, KALAH_REDIS_URL=redis_server.url)
    assert limited(app.test_client())
