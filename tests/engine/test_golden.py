"""Golden games (OpenSpiel "playthrough" style): one recorded game per preset, replayed with the
engine and diffed position by position.

The files in tests/data/golden/ were played through the plain-Python reference, not the engine
(benchmarks/make_golden.py); ``kalaha`` is the example game of seed 000.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kalah_core import PRESETS, Game, Position

GOLDEN = Path(__file__).parents[1] / "data" / "golden"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())
    return data


def test_every_preset_has_a_golden_game() -> None:
    missing = [name for name in PRESETS if not (GOLDEN / f"{name}.json").is_file()]
    assert not missing, f"no golden game for {missing}: run benchmarks/make_golden.py"
    extra = {path.stem for path in GOLDEN.glob("*.json")} - set(PRESETS)
    assert not extra, f"golden games for unknown presets {extra}"


@pytest.mark.parametrize("name", list(PRESETS))
def test_golden_game(name: str) -> None:
    data = load(name)
    rules = PRESETS[name]
    assert data["preset"] == name
    assert data["rules"] == rules.to_json(), f"{name}: rules changed; rerun make_golden"
    game = Game(rules)
    assert game.position.compact() == data["start"]
    for step in data["steps"]:
        where = f"{name} ply {step['ply']} ({step['move']!r} in {game.position})"
        assert game.position.to_move.value == step["player"], where
        assert game.outcome() is None, where
        assert game.legal_moves() == step["legal_moves"], where
        result = game.push(step["move"])
        assert result.after.compact() == step["position"], where
        assert result.extra_turn == step["extra_turn"], where
        assert result.captured == step["captured"], where
        assert result.over == step["over"], where
    outcome = game.outcome()
    assert outcome is not None
    assert list(outcome.score) == data["final_score"]
    winner = outcome.winner
    assert (winner.value if winner else None) == data["winner"]
    assert game.legal_moves() == []
    assert game.fi() == data["fi"]


@pytest.mark.parametrize("name", list(PRESETS))
def test_golden_game_from_notation(name: str) -> None:
    """The Finnish notation of each game (and the article's own text for ``kalaha``) replays
    to the same positions."""
    data = load(name)
    positions = [step["position"] for step in data["steps"]]
    for text in (data["fi"], data.get("fi_source", data["fi"])):
        game = Game.parse_fi(text, PRESETS[name])
        assert [result.after.compact() for result in game.history] == positions, text


def test_seed_000_example_game() -> None:
    data = load("kalaha")
    assert data["fi_source"] == "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
    assert data["final_score"] == [12, 24]
    final = Position.parse(data["steps"][-1]["position"])
    assert final.south == (0,) * 6 and final.stores == (12, 24)
