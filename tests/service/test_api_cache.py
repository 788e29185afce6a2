"""The cache: a real ``redis-server`` (started by the fixtures, never a fake) and the LRU."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
from flask import Flask

from kalah_core import Position, Rules
from kalah_service import create_app
from kalah_service.core.analyser import Analyser
from kalah_service.core.request import AnalysisRequest, Limits
from kalah_service.stores.answers import Entry, Keys, Lru
from kalah_service.stores.embedded_answers import EmbeddedStore

if TYPE_CHECKING:
    from harness import RedisServer

SMALL = "houses=3&seeds=3"
MIDGAME = "01d120-17-001201-10-n"


def analyse(app: Flask, query: str, **headers: str) -> Any:
    return app.test_client().get(f"/v1/analysis?{query}", headers=headers)


def count_searches(app: Flask) -> list[int]:
    """Wrap the app's engine search to count how many searches actually ran."""
    analyser: Analyser = app.extensions["kalah"]
    calls: list[int] = []
    search = analyser.search

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        time.sleep(0.2)  # make the overlap of concurrent requests certain
        return search(*args, **kwargs)

    analyser.search = counted  # type: ignore[method-assign]
    return calls


def keys_of(app: Flask, rules: Rules, position: str, limits: Limits) -> Keys:
    """The keys the app's analyser uses for this request."""
    analyser = app.extensions["kalah"]
    return analyser.keys(AnalysisRequest(Position.parse(position), rules, limits))  # type: ignore[no-any-return]


def redis_client(server: RedisServer) -> redis.Redis:
    return redis.Redis.from_url(server.url)


# ---------------------------------------------------------------------------------- Redis


# ---------------------------------------------------------------------------------- memory


def test_the_embedded_store_computes_once_in_a_process(app: Flask) -> None:
    calls = count_searches(app)
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(lambda _: analyse(app, f"position=start&{SMALL}").get_json(), range(6))
        )
    assert len(calls) == 1
    assert sorted(a["cached"] for a in answers) == [False] + [True] * 5


def test_lru_is_bounded_and_expires() -> None:
    lru = Lru(3)
    for i in range(5):
        lru.put(f"k{i}", Entry(b"{}", True, None), None)
    assert len(lru) == 3 and lru.get("k0") is None and lru.get("k4") is not None
    lru.put("h", Entry(b"{}", False, 3), 0.05)
    assert lru.get("h") is not None
    time.sleep(0.06)
    assert lru.get("h") is None


def test_embedded_heuristic_replaced_only_by_deeper(tmp_path: Path) -> None:
    cache = EmbeddedStore(tmp_path / "answers", size_mb=1, ttl_s=60, lru_size=10)
    keys = Keys("v:exact", "v:t1", "v:t1:lock")
    cache.put(keys, Entry(b'{"d":5}', False, 5))
    cache.put(keys, Entry(b'{"d":4}', False, 4))
    assert cache.get(keys) == Entry(b'{"d":5}', False, 5)
    cache.put(keys, Entry(b'{"d":6}', False, 6))
    assert cache.get(keys) == Entry(b'{"d":6}', False, 6)
    cache.put(keys, Entry(b'{"x":1}', True, None))
    assert cache.get(keys) == Entry(b'{"x":1}', True, None), "an exact entry wins"


@pytest.mark.parametrize("entry", [Entry(b'{"a":1}', True, None), Entry(b'{"a":|1}', False, 17)])
def test_entry_round_trip(entry: Entry) -> None:
    assert Entry.decode(entry.encode()) == entry


def test_keys_hold_version_rules_position_and_limits() -> None:
    request = AnalysisRequest(Position.start(Rules()), Rules(), Limits(500, 4))
    assert request.key == "h6s4neo00:444444-0-444444-0-s:t500d4"
    keys = Keys.of("eng-1", request.key, request.exact_key)
    assert keys.limits == "kalah:v1:eng-1:h6s4neo00:444444-0-444444-0-s:t500d4"
    assert keys.exact == "kalah:v1:eng-1:h6s4neo00:444444-0-444444-0-s:exact"


def test_apps_share_the_embedded_store_of_their_folder(tmp_path: Path) -> None:
    """Without Redis, apps (workers) on one store folder share answers; other folders do not."""
    config = {"TESTING": True, "KALAH_REDIS_URL": ""}
    a = create_app({**config, "KALAH_CACHE_DIR": str(tmp_path / "one")})
    b = create_app({**config, "KALAH_CACHE_DIR": str(tmp_path / "one")})
    c = create_app({**config, "KALAH_CACHE_DIR": str(tmp_path / "two")})
    first = analyse(a, f"position=start&{SMALL}")
    second = analyse(b, f"position=start&{SMALL}")
    assert (first.get_json()["cached"], second.get_json()["cached"]) == (False, True)
    assert analyse(c, f"position=start&{SMALL}").get_json()["cached"] is False
