"""``/v1/analysis`` and ``/v1/best-move`` through the Flask test client (in-process LRU)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from kalah_core import Position, Rules, play

SMALL_QUERY = "rules=kalah&houses=3&seeds=3"
MIDGAME = "01d120-17-001201-10-n"
"""A Kalah(6,4) position after 28 plies, 21 seeds in the houses: solved in a few ms."""

ANSWER_FIELDS = {
    "cached",
    "book",
    "position",
    "board",
    "rules",
    "perspective",
    "to_move",
    "value",
    "exact",
    "lower",
    "upper",
    "best_moves",
    "moves",
    "pv",
    "depth",
    "nodes",
    "time_ms",
    "over",
    "limits",
    "engine",
}
MOVE_FIELDS = {"move", "value", "exact", "lower", "upper", "extra_turn", "captured", "position"}


def get(client: FlaskClient, query: str, **headers: str) -> Any:
    return client.get(f"/v1/analysis?{query}", headers=headers)


def check_consistent(answer: dict[str, Any], rules: Rules) -> None:
    """The contract between the answer's fields, re-derived from the rules."""
    assert set(answer) == ANSWER_FIELDS
    assert answer["perspective"] == "side_to_move"
    position = Position.parse(answer["position"])
    assert answer["board"] == position.to_json()
    assert answer["lower"] <= answer["value"] <= answer["upper"]
    values = [m["value"] for m in answer["moves"]]
    assert values == sorted(values, reverse=True), "moves are best first"
    for m in answer["moves"]:
        assert set(m) == MOVE_FIELDS
        result = play(position, rules, m["move"])
        assert m["position"] == result.after.compact()
        assert m["extra_turn"] == result.extra_turn
        assert m["captured"] == result.captured
        assert m["lower"] <= m["value"] <= m["upper"]
    if answer["exact"]:
        assert answer["depth"] is None
        assert answer["lower"] == answer["value"] == answer["upper"]
        best = [m["move"] for m in answer["moves"] if m["exact"] and m["value"] == answer["value"]]
        assert answer["best_moves"] == best
    assert answer["best_moves"] and answer["best_moves"][0] == answer["moves"][0]["move"]
    assert answer["pv"] and answer["pv"][0][0] in answer["best_moves"]


def test_get_start_is_exact_and_consistent(client: FlaskClient) -> None:
    response = get(client, f"position=start&{SMALL_QUERY}")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    answer = response.get_json()
    rules = Rules(houses=3, seeds=3)
    assert answer["rules"] == rules.to_json()
    assert answer["position"] == "333-0-333-0-s"
    assert answer["exact"] is True
    assert answer["cached"] is False
    assert answer["over"] is False
    assert answer["limits"] == {"time_ms": 1000, "depth": None, "nodes": None}
    check_consistent(answer, rules)


def test_second_request_is_a_cache_hit(client: FlaskClient) -> None:
    first = get(client, f"position=start&{SMALL_QUERY}").get_json()
    second = get(client, f"position=333-0-333-0-s&{SMALL_QUERY}").get_json()
    assert (first["cached"], second["cached"]) == (False, True)
    assert {**first, "cached": True} == second


def test_exact_answers_are_immutable_with_a_strong_etag(client: FlaskClient) -> None:
    get(client, f"position=start&{SMALL_QUERY}")  # computed
    response = get(client, f"position=start&{SMALL_QUERY}")  # cached: the stable representation
    etag = response.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    again = get(client, f"position=start&{SMALL_QUERY}", **{"If-None-Match": etag})
    assert again.status_code == 304
    assert again.data == b""
    assert again.headers["ETag"] == etag
    assert (
        get(client, f"position=start&{SMALL_QUERY}", **{"If-None-Match": '"other"'}).status_code
        == 200
    )
    assert get(client, f"position=start&{SMALL_QUERY}", **{"If-None-Match": "*"}).status_code == 304


def test_post_with_json_forms_matches_get(client: FlaskClient) -> None:
    rules = Rules(houses=3, seeds=3)
    start = Position.start(rules)
    posted = client.post(
        "/v1/analysis",
        json={
            "position": start.to_json(),
            "rules": {"preset": "kalah", "houses": 3, "seeds": 3},
            "limits": {},
        },
    )
    assert posted.status_code == 200
    assert "Cache-Control" not in posted.headers
    by_get = get(client, f"position=start&{SMALL_QUERY}").get_json()
    assert {**posted.get_json(), "cached": True} == by_get


def test_post_accepts_compact_and_json_text(client: FlaskClient) -> None:
    text = '{"south": [3, 3, 3], "north": [3, 3, 3]}'
    a = client.post(
        "/v1/analysis", json={"position": text, "rules": {"houses": 3, "seeds": 3}}
    ).get_json()
    b = client.post(
        "/v1/analysis", json={"position": "333-0-333-0-s", "rules": {"houses": 3, "seeds": 3}}
    ).get_json()
    assert a["position"] == b["position"] == "333-0-333-0-s"
    assert a["value"] == b["value"]


def test_midgame_kalah_is_solved(client: FlaskClient) -> None:
    answer = get(client, f"position={MIDGAME}&time_ms=5000").get_json()
    assert answer["exact"] is True
    assert answer["to_move"] == "north"
    check_consistent(answer, Rules())


def test_heuristic_answer_has_bounds_and_depth(client: FlaskClient) -> None:
    response = get(client, "position=start&depth=2")
    answer = response.get_json()
    assert answer["exact"] is False
    assert isinstance(answer["depth"], int) and answer["depth"] <= 2
    assert answer["limits"] == {"time_ms": 1000, "depth": 2, "nodes": None}
    assert response.headers["Cache-Control"] == "no-cache"
    check_consistent(answer, Rules())
    assert get(client, "position=start&depth=2").get_json()["cached"] is True


def test_exact_result_answers_any_limits(client: FlaskClient) -> None:
    assert get(client, f"position=start&{SMALL_QUERY}&time_ms=900").get_json()["cached"] is False
    answer = get(client, f"position=start&{SMALL_QUERY}&time_ms=50&depth=1").get_json()
    assert answer["cached"] is True and answer["exact"] is True


def test_game_over_position(client: FlaskClient) -> None:
    answer = get(client, "position=000000-30-000012-15-s").get_json()
    assert answer["over"] is True
    assert answer["exact"] is True
    assert answer["moves"] == [] and answer["best_moves"] == [] and answer["pv"] == []
    assert answer["value"] == 30 - 18


def test_rule_overrides_in_the_query(client: FlaskClient) -> None:
    answer = get(
        client, "position=start&rules=piet-hein&houses=3&seeds=2&capture=always&majority=false"
    ).get_json()
    assert answer["rules"] == Rules.preset("piet-hein", houses=3, seeds=2).to_json()
    assert answer["position"] == "222-0-222-0-s"


def test_pie_rule_offers_swap(client: FlaskClient) -> None:
    rules = Rules.preset("kalah-pie", houses=3, seeds=2)
    after = play(Position.start(rules), rules, 1).after
    assert after.swap_available
    answer = get(client, f"position={after.compact()}&rules=kalah-pie&houses=3&seeds=2").get_json()
    assert "swap" in [m["move"] for m in answer["moves"]]
    check_consistent(answer, rules)


@pytest.mark.parametrize(
    "query", [f"position=start&{SMALL_QUERY}", f"position={MIDGAME}&time_ms=5000"]
)
def test_best_move(client: FlaskClient, query: str) -> None:
    full = get(client, query).get_json()
    response = client.get(f"/v1/best-move?{query}")
    assert response.status_code == 200
    best = response.get_json()
    assert best == {
        "cached": True,
        "position": full["position"],
        "perspective": "side_to_move",
        "best_move": full["best_moves"][0],
        "best_moves": full["best_moves"],
        "value": full["value"],
        "exact": True,
        "lower": full["value"],
        "upper": full["value"],
    }
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    again = client.get(
        f"/v1/best-move?{query}", headers={"If-None-Match": response.headers["ETag"]}
    )
    assert again.status_code == 304


def test_best_move_when_over(client: FlaskClient) -> None:
    best = client.get("/v1/best-move?position=000000-30-000012-15-s").get_json()
    assert best["best_move"] is None and best["value"] == 12


def test_analyse_body_is_the_same_code_path(client: FlaskClient) -> None:
    """The HTTP-free entry point gives the same answer as the API."""
    from kalah_service.ops.backends import default_analyser

    app = client.application
    body = {"position": MIDGAME, "limits": {"time_ms": 5000}}
    by_http = client.post("/v1/analysis", json=body)
    direct = app.extensions["kalah"].analyse_body(body)
    assert direct == {**by_http.get_json(), "cached": True}
    standalone = default_analyser().analyse_body(
        {"position": "start", "rules": {"houses": 3, "seeds": 3}}
    )
    assert standalone["exact"] is True and standalone["position"] == "333-0-333-0-s"
