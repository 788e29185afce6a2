"""``POST /v1/games/analysis`` through the Flask test client, and ``kalah analyse-game``."""

from __future__ import annotations

import json
import random

import pytest
from flask.testing import FlaskClient

from kalah_core import Position, Rules
from kalah_core.cli import main
from kalah_core.game import Game, legal_moves
from kalah_service import create_app

EXAMPLE = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
EXAMPLE_LOSSES = [4, 0, 0, 4, 2, 0, 2, 0, 0, 10] + [0] * 14
MOVE_FIELDS = {
    "index",
    "mover",
    "move",
    "position",
    "value_before",
    "value_after",
    "best_moves",
    "loss",
    "judgement",
    "exact",
    "extra_turn",
    "captured",
}


def test_example_game_under_kalaha() -> None:
    # A budget that is only a cap (about 3 s are needed), so a busy machine still proves it all.
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": "", "KALAH_MAX_TIME_MS": 60000})
    client = app.test_client()
    body = {"rules": "kalaha", "game": EXAMPLE, "limits": {"time_ms": 60000}}
    response = client.post("/v1/games/analysis", json=body)
    assert response.status_code == 200, response.json
    data = response.json
    assert data["exact"] is True
    assert [m["loss"] for m in data["moves"]] == EXAMPLE_LOSSES
    assert all(set(m) == MOVE_FIELDS for m in data["moves"])
    first = data["moves"][0]
    assert first == {
        "index": 0,
        "mover": "south",
        "move": 4,
        "position": "333333-0-333333-0-s",
        "value_before": 2,
        "value_after": -2,
        "best_moves": [5],
        "loss": 4,
        "judgement": "mistake",
        "exact": True,
        "extra_turn": True,
        "captured": 0,
    }
    assert data["moves"][9]["judgement"] == "blunder"
    assert data["summary"]["south"]["average_loss"] == 2.0
    assert data["summary"]["north"]["judgements"]["mistake"] == 1
    assert data["annotated"].startswith("4?5-46?, 1*?!-5")
    # Every position went through the analysis cache: asking one again is a hit.
    again = client.post(
        "/v1/analysis", json={"rules": "kalaha", "position": data["moves"][5]["position"]}
    ).json
    assert again["cached"] is True and again["value"] == data["moves"][5]["value_before"]


def test_moves_from_a_position(client: FlaskClient) -> None:
    body = {"rules": {"houses": 3, "seeds": 2}, "position": "222-0-222-0-s", "moves": [2, 1]}
    data = client.post("/v1/games/analysis", json=body).json
    assert [m["move"] for m in data["moves"]] == [2, 1]
    assert data["moves"][1]["mover"] == "south"  # 2 ended in the store: South again
    assert data["start"] == "222-0-222-0-s"


def test_pie_swap_is_a_move(client: FlaskClient) -> None:
    body = {"rules": {"houses": 3, "seeds": 2, "pie": True}, "moves": [1, "swap"]}
    data = client.post("/v1/games/analysis", json=body).json
    assert data["moves"][1]["move"] == "swap"
    assert data["moves"][1]["loss"] >= 0


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"rules": "kalaha", "moves": [4, 5, 9]}, 422, "moves.2"),
        ({"rules": "kalaha", "moves": [1, 1, 1]}, 422, "moves.2"),
        ({"rules": "kalaha", "moves": [4], "game": "4-"}, 422, "game"),
        ({"rules": "kalaha"}, 422, "game"),
        ({"rules": "kalaha", "game": "4"}, 422, "game"),
        ({"rules": "kalaha", "game": "4-7"}, 422, "game"),
        ({"rules": "nope", "game": "1-"}, 422, "rules"),
        ({"game": "1-", "position": "1-2"}, 422, "position"),
        ({"rules": "kalaha", "game": "1-", "limits": {"time_ms": 999999}}, 422, "limits.time_ms"),
        ({"rules": "kalaha", "game": "1-", "limits": {"depth": 1000}}, 422, "limits.depth"),
    ],
)
def test_errors_name_the_field(client: FlaskClient, body: dict, status: int, field: str) -> None:
    response = client.post("/v1/games/analysis", json=body)
    assert response.status_code == status, response.json
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json["field"] == field


def test_budget_too_small_is_labelled_inexact(client: FlaskClient) -> None:
    # Kalah(6,6): beyond the opening book (which would answer exactly at any budget).
    body = {
        "rules": {"preset": "kalah", "seeds": 6},
        "game": "3-",
        "limits": {"time_ms": 5, "nodes": 50},  # the least for one position
    }
    data = client.post("/v1/games/analysis", json=body).json
    assert data["exact"] is False and data["moves"][0]["exact"] is False
    assert data["summary"]["south"]["exact"] is False


def test_cli_analyse_game(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KALAH_REDIS_URL", "")
    assert main(["analyse-game", "--rules", "kalaha", EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "4?5-46?, 1*?!-5, 2?!-63*, 6??-561646562*, 4-3, 656-"
    assert " 10  south     6    -2  -12    10  blunder     5" in out
    # Counts in words with their plurals.
    assert "5 best sowings, 2 inaccuracies, 1 mistake, 1 blunder" in out
    assert "14 best sowings, 0 inaccuracies, 1 mistake, 0 blunders" in out
    assert main(["analyse-game", "--rules", "kalaha", "--json", EXAMPLE]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["loss"] for m in data["moves"]] == EXAMPLE_LOSSES
    assert main(["analyse-game", "--rules", "kalaha", "4-7"]) == 2
    assert "illegal move" in capsys.readouterr().err


def long_game(seed: int) -> dict[str, object]:
    """A random game of Kalah(8,10) from 15 seeds a house: about 150-230 sowings."""
    rules = Rules(houses=8, seeds=10)
    start = Position.from_json({"south": [15] * 8, "north": [15] * 8, "to_move": "south"})
    game, rng = Game(rules, start), random.Random(seed)
    while moves := legal_moves(game.history[-1].after if game.history else start, rules):
        game.push(rng.choice(moves))
    return {
        "rules": {"houses": 8, "seeds": 10},
        "position": start.compact(),
        "moves": [h.move for h in game.history],
    }


SLOW_S = 0.1
"""What the busy machine adds to each position's search."""
