"""``moves=`` restricts an analysis to some root moves, like chess engines' ``searchmoves``
(issue 50, deliver 4): one-shot and streamed, validated like every other field."""

from __future__ import annotations

import json
from typing import Any

import pytest

SMALL = "/v1/analysis?rules=kalah&houses=3&seeds=3&position=start"


def test_an_exact_answer_of_some_moves_has_their_values_only(client: Any) -> None:
    full = client.get(SMALL).get_json()
    assert full["exact"] is True and len(full["moves"]) == 3
    by_move = {m["move"]: m for m in full["moves"]}
    for chosen in ([1], [2, 3], [1, 3]):
        answer = client.get(SMALL + "&moves=" + ",".join(map(str, chosen))).get_json()
        assert answer["cached"] is False  # not the full answer from the store
        assert [m["move"] for m in sorted(answer["moves"], key=lambda m: m["move"])] == chosen
        for move in answer["moves"]:
            assert move == by_move[move["move"]]
        best = max(by_move[m]["value"] for m in chosen)
        assert answer["exact"] is True and answer["value"] == best
        assert answer["best_moves"] == [m for m in chosen if by_move[m]["value"] == best]


def test_a_post_and_a_stream_take_moves_too(client: Any) -> None:
    body = {"rules": "piet-hein", "position": "start", "moves": [3, 5]}
    body["limits"] = {"time_ms": 5000, "nodes": 200_000}  # no deep book for some moves
    response = client.post("/v1/analysis", json=body, headers={"Accept": "application/x-ndjson"})
    events = [json.loads(line) for line in response.data.split(b"\n") if line.strip()]
    assert events[-1]["final"] is True
    for event in events[:-1]:
        assert {m["move"] for m in event["moves"]} == {3, 5}
        assert event["upper"] == max(m["upper"] for m in event["moves"])
    answer = events[-1]["answer"]
    assert {m["move"] for m in answer["moves"]} == {3, 5}
    # The bounds are the chosen moves' own (the whole position's may be wider or narrower).
    assert answer["lower"] == max(m["lower"] for m in answer["moves"])
    assert answer["upper"] == max(m["upper"] for m in answer["moves"])
    assert answer["lower"] <= answer["value"] <= answer["upper"]
    one_shot = client.post("/v1/analysis", json=body).get_json()
    assert one_shot["cached"] is True and one_shot["moves"] == answer["moves"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("&moves=4", "moves"),  # 3 houses
        ("&moves=1,x", "moves"),
        ("&moves=swap", "moves"),  # no swap under kalah
        ("&moves=", "moves"),
    ],
)
def test_a_move_that_is_not_legal_is_a_422_naming_moves(
    client: Any, query: str, field: str
) -> None:
    response = client.get(SMALL + query)
    assert response.status_code == 422
    problem = response.get_json()
    assert problem["field"] == field and problem["detail"]


@pytest.mark.parametrize(
    ("moves", "field"),
    [([1, 9], "moves.1"), ([], "moves"), (["swap"], "moves.0"), ("1", "moves"), ([0], "moves.0")],
)
def test_a_body_names_the_bad_move(client: Any, moves: Any, field: str) -> None:
    body = {"rules": {"houses": 3, "seeds": 3}, "position": "start", "moves": moves}
    response = client.post("/v1/analysis", json=body)
    assert response.status_code == 422, response.get_json()
    assert response.get_json()["field"] == field
