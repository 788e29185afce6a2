"""Issue 47, finding 1: valid positions with more than 255 seeds in one pit (a house, or a
store under ``majority``) are answered on every entry point, never a 500. The opening book
and the deep book key positions one byte a pit; such a position is simply in no book."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from kalah_core.rules import PRESETS

BIG_HOUSE = "~4800001-0-100000-0-s"
"""A 6-house board, 256 seeds in South's house 1 (258 in all), South to move."""
BIG_NORTH = "000001-0-~4800000-0-n"
"""256 seeds in North's house 1, North to move: the mover's own house."""
BIG_OPPONENT = "~4Q00001-0-100000-0-n"
"""300 seeds in the opponent's house (the issue's repro, the other side to move)."""
BIG_STORE = "YYYO00-260-aaaaaa-0-s"
"""260 seeds in South's store, 550 in all: not over under ``majority`` (kalah-ru's key packs
the stores too)."""
BIG = (BIG_HOUSE, BIG_NORTH, BIG_OPPONENT, BIG_STORE)
SIX_HOUSE = [name for name, rules in PRESETS.items() if rules.houses == 6] + ["kgp"]
"""Every 6-house preset, and KGP's 6x6 board (a deep book of its own)."""
FAST = {"nodes": 2000}


def rules(preset: str) -> dict[str, Any]:
    seeds = 6 if preset == "kgp" else PRESETS[preset].seeds
    return {"preset": preset, "houses": 6, "seeds": seeds}


def query(preset: str) -> str:
    return "&".join(f"{k.replace('preset', 'rules')}={v}" for k, v in rules(preset).items())


def assert_answer(response: Any, position: str) -> None:
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.json["position"] == position


@pytest.mark.parametrize("position", BIG)
@pytest.mark.parametrize("preset", SIX_HOUSE)
def test_get_analysis(client: FlaskClient, preset: str, position: str) -> None:
    response = client.get(f"/v1/analysis?position={position}&{query(preset)}&nodes=2000")
    assert_answer(response, position)


@pytest.mark.parametrize("position", BIG)
@pytest.mark.parametrize("preset", SIX_HOUSE)
def test_post_analysis(client: FlaskClient, preset: str, position: str) -> None:
    body = {"position": position, "rules": rules(preset), "limits": FAST}
    assert_answer(client.post("/v1/analysis", json=body), position)


@pytest.mark.parametrize("position", BIG)
@pytest.mark.parametrize("preset", SIX_HOUSE)
def test_best_move(client: FlaskClient, preset: str, position: str) -> None:
    url = f"/v1/best-move?position={position}&{query(preset)}&time_ms=50"
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.json["best_move"] in range(1, 7)


@pytest.mark.parametrize("preset", SIX_HOUSE)
def test_game_analysis(client: FlaskClient, preset: str) -> None:
    body = {
        "position": BIG_HOUSE,
        "moves": [6, 1],
        "rules": rules(preset),
        "limits": FAST,
    }
    response = client.post("/v1/games/analysis", json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert [m["move"] for m in response.json["moves"]] == [6, 1]


@pytest.mark.parametrize("preset", SIX_HOUSE)
def test_inline_batch(client: FlaskClient, preset: str) -> None:
    """Every big item answered beside a small one: no slot is a problem, none a 500."""
    items = [{"position": p} for p in BIG] + [{"position": "start"}]
    body = {"positions": items, "rules": rules(preset), "limits": FAST}
    response = client.post("/v1/batch", json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    results = response.json["results"]
    assert [r.get("position") for r in results[:4]] == list(BIG), results
    assert "status" not in results[-1], results[-1]
