"""Every input bound: out of bounds is a 4xx problem+json naming the field and the limit,
never a 500; the limits are reported by GET /v1/rules; memory and time stay bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from kalah_service.base.config import MAX_PV_SOWINGS, load_settings, worker_timeout_s
from kalah_service.stores.answers import Entry, Lru
from kalah_service.stores.walbound import SHM_BYTES

PROBLEM = "application/problem+json"
A = "/v1/analysis"
P = "/v1/play"


def problem(response: Any, status: int, field: str, *mentions: str) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM
    body: dict[str, Any] = response.get_json()
    assert body["field"] == field, body
    for text in mentions:
        assert text in body["detail"], body
    return body


def raw(client: FlaskClient, path: str, text: str) -> Any:
    return client.post(path, data=text, content_type="application/json")


# ----------------------------------------------------------------------------- bodies


@pytest.mark.parametrize("path", [A, P])
def test_body_size(client: FlaskClient, path: str) -> None:
    body = problem(raw(client, path, "{" + " " * 70_000 + "}"), 413, "body", "65536")
    assert body["max"] == 65536


@pytest.mark.parametrize("path", [A, P])
@pytest.mark.parametrize(
    "text",
    [
        "[" * 30_000 + "]" * 30_000,
        '{"position": ' + "[" * 5_000 + "]" * 5_000 + "}",
        '{"moves": ' + "[" * 20_000 + "]" * 20_000 + "}",
    ],
)
def test_deeply_nested_body_is_a_400(client: FlaskClient, path: str, text: str) -> None:
    problem(raw(client, path, text), 400, "body", "nested too deeply")


def test_huge_integer_in_body_is_a_400(client: FlaskClient) -> None:
    text = '{"position": "start", "limits": {"time_ms": ' + "9" * 5000 + "}}"
    problem(raw(client, A, text), 400, "body", "4300 digits")


@pytest.mark.parametrize("value", ["5.5", "1e308", "true", '"100"', "null"])
def test_budgets_in_a_body_are_integers(client: FlaskClient, value: str) -> None:
    text = '{"position": "start", "limits": {"time_ms": ' + value + "}}"
    problem(raw(client, A, text), 422, "limits.time_ms")


# ----------------------------------------------------------------------------- budgets


@pytest.mark.parametrize(
    ("name", "value", "maximum"),
    [("time_ms", 5001, 5000), ("depth", 101, 100), ("nodes", 10**9 + 1, 10**9)],
)
def test_budgets_above_the_server_maximum(
    client: FlaskClient, name: str, value: int, maximum: int
) -> None:
    posted = client.post(A, json={"position": "start", "limits": {name: value}})
    body = problem(posted, 422, f"limits.{name}", str(maximum))
    assert body["max"] == maximum and body["type"] == "/problems/limit-exceeded"
    got = client.get(f"{A}?position=start&{name}={value}")
    assert problem(got, 422, name, str(maximum))["max"] == maximum


def test_search_budgets_stay_well_under_the_worker_timeout() -> None:
    for max_ms in (1, 1000, 10_000, 600_000):
        settings = load_settings({"KALAH_MAX_TIME_MS": max_ms, "KALAH_DEFAULT_TIME_MS": 1})
        assert worker_timeout_s(settings) >= 3 * (max_ms // 1000) + 30
    with pytest.raises(ValueError, match="KALAH_MAX_TIME_MS"):
        load_settings({"KALAH_MAX_TIME_MS": 600_001})
    with pytest.raises(ValueError, match="KALAH_TT_MB"):
        load_settings({"KALAH_TT_MB": 65537})


# ----------------------------------------------------------------------------- positions, rules


@pytest.mark.parametrize(
    ("query", "status", "field", "mention"),
    [
        ("houses=0", 422, "houses", "1..12"),
        ("houses=13", 422, "houses", "1..12"),
        ("seeds=0", 422, "seeds", "1..24"),
        ("seeds=25", 422, "seeds", "1..24"),
    ],
)
def test_rule_bounds_in_a_query(
    client: FlaskClient, query: str, status: int, field: str, mention: str
) -> None:
    problem(client.get(f"{A}?position=start&{query}"), status, field, mention)


@pytest.mark.parametrize(
    ("rules", "field", "mention"),
    [
        ({"houses": 13}, "rules.houses", "1..12"),
        ({"seeds": 25}, "rules.seeds", "1..24"),
        ({"houses": 10**100}, "rules.houses", "1..12"),
        ({f"k{i}": 1 for i in range(17)}, "rules", ""),
        ("x" * 65, "rules", ""),
    ],
)
def test_rule_bounds_in_a_body(client: FlaskClient, rules: Any, field: str, mention: str) -> None:
    problem(client.post(A, json={"position": "start", "rules": rules}), 422, field, mention)


def test_position_bounds(client: FlaskClient) -> None:
    too_many = {"south": [500, 0, 0, 0, 0, 0], "north": [101, 0, 0, 0, 0, 0]}
    problem(client.post(A, json={"position": too_many}), 422, "position", "600")
    thirteen = {"south": [1] * 13, "north": [1] * 13}
    problem(client.post(A, json={"position": thirteen}), 422, "position.south", "1..12")
    big = {"south": [601, 0, 0, 0, 0, 0], "north": [0] * 6}
    problem(client.post(A, json={"position": big}), 422, "position.south", "0..600")
    long_compact = "4" * 30 + "-0-" + "4" * 30 + "-0-s"
    problem(client.get(f"{A}?position={long_compact}"), 422, "position", "64 characters")
    problem(client.get(f"{A}?position=" + "4" * 1025), 422, "position")
    problem(client.post(A, json={"position": "4" * 1025}), 422, "position", "1024")
    text = json.dumps({"south": [4] * 6, "north": [4] * 6, "stores": [0, 0]}) + " " * 4100
    problem(client.post(A, json={"position": text}), 422, "position", "1024")


def test_play_bounds(client: FlaskClient) -> None:
    problem(client.post(P, json={"moves": [1] * 1025}), 422, "moves", "1024")
    problem(client.post(P, json={"game": "1-" * 2100}), 422, "game", "4096")
    problem(client.post(P, json={"moves": [9]}), 422, "moves.0")
    problem(client.post(P), 400, "body", "required")


# ----------------------------------------------------------------------------- answers, memory


def test_pv_is_capped(client: FlaskClient) -> None:
    answer = client.get(f"{A}?position=start&seeds=6&time_ms=300").get_json()
    assert sum(len(turn) for turn in answer["pv"]) <= MAX_PV_SOWINGS
    # a board proven in a few thousand nodes, so that a loaded machine cannot leave it unproven
    exact = client.get(f"{A}?position=start&houses=3&seeds=3&time_ms=5000").get_json()
    assert exact["exact"] and 0 < sum(len(turn) for turn in exact["pv"]) <= MAX_PV_SOWINGS


def test_rules_reports_every_limit(client: FlaskClient) -> None:
    limits = client.get("/v1/rules").get_json()["limits"]
    assert limits == {
        "default_time_ms": 1000,
        "max_time_ms": 5000,
        "max_stream_time_ms": 60000,
        "max_depth": 100,
        "max_nodes": 10**9,
        "max_body_bytes": 65536,
        "max_moves": 1024,
        "max_pv_sowings": MAX_PV_SOWINGS,
        "max_seeds": 600,
        "max_notation_length": 64,
        "max_position_text": 1024,
        "max_game_length": 4096,
        "batch_max_positions": 10000,
        "batch_inline_max": 16,
        "batch_max_budget_ms": 10_000_000,
        "batch_max_body_bytes": 4 * 1024 * 1024,
        "batch_jobs": True,
        "batch_jobs_need_key": False,
    }


def test_the_lru_is_bounded() -> None:
    lru = Lru(50)
    for i in range(1000):
        lru.put(f"k{i}", Entry(b"{}", True, None), None)
    assert len(lru) == 50 and lru.get("k999") is not None and lru.get("k0") is None


def test_the_answer_cache_of_an_app_is_bounded(client: FlaskClient, tmp_path: Path) -> None:
    from flask import current_app

    with client.application.app_context():
        analyser = current_app.extensions["kalah"]
        assert analyser.cache.size() == 0
        assert analyser.settings.lru_size == 10000
    small = create_small_app(lru=3, store=tmp_path / "answers")
    for houses in range(1, 7):
        small.get(f"{A}?position=start&houses={houses}&seeds=1")
    cache = small.application.extensions["kalah"].cache
    assert len(cache._memory) == 3  # each process's LRU in front of the store
    assert cache.size() == 6  # the shared store, bounded in bytes (KALAH_CACHE_MB)
    assert cache.size_limit == 512 * 1024 * 1024  # KALAH_CACHE_MB, the WAL included:
    bound = cache.wal_bound  # the database gets what the log and its index leave
    assert cache.store.size_limit == bound.db_limit
    assert bound.db_limit + bound.wal_share + SHM_BYTES <= cache.size_limit


def create_small_app(*, lru: int, store: Path) -> FlaskClient:
    from kalah_service import create_app

    config = {"KALAH_REDIS_URL": "", "KALAH_LRU_SIZE": lru, "KALAH_CACHE_DIR": str(store)}
    return create_app({"TESTING": True, **config}).test_client()
