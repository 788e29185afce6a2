"""Perft from the start of every preset: the engine against the reference (shallow, live) and
against the recorded counts of tests/data/perft.json (deeper; written by
benchmarks/make_perft.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kalah_core import PRESETS, Position, Rules, _bigboard, game, perft
from kalah_core import reference as ref

DATA = Path(__file__).parents[1] / "data" / "perft.json"
REFERENCE_DEPTH = 6  # the reference plays ~100k sowings/s: depths 1..6 of all presets ~2-3 s
REFERENCE_MAX_LEAVES = 50_000  # ... and at most this many leaves (every 6-house preset's depth 6)
MAX_LIVE_NODES = 20_000_000  # recorded depths checked by default: up to ~20M leaves each (< 3 s)


def recorded() -> dict[str, Any]:
    presets: dict[str, Any] = json.loads(DATA.read_text())["presets"]
    return presets


def test_every_preset_is_recorded() -> None:
    data = recorded()
    assert set(data) == set(PRESETS)
    for name, rules in PRESETS.items():
        assert data[name]["rules"] == rules.to_json(), f"{name}: rules changed; rerun make_perft"
        assert data[name]["start"] == Position.start(rules).compact()
        assert len(data[name]["perft"]) >= 10


@pytest.mark.parametrize("name", list(PRESETS))
def test_perft_against_reference(name: str) -> None:
    rules = PRESETS[name]
    start = Position.start(rules)
    counts = recorded()[name]["perft"]
    for depth in range(REFERENCE_DEPTH + 1):
        if depth and counts[depth - 1] > REFERENCE_MAX_LEAVES:
            break  # kgp's 8 houses: depth 6 would take the reference ~5 s
        expected = ref.perft(start, rules, depth)
        assert perft(start, rules, depth) == expected, (name, depth)
        if depth:
            assert counts[depth - 1] == expected, (name, depth)


@pytest.mark.parametrize("name", list(PRESETS))
def test_perft_against_recorded(name: str) -> None:
    rules = PRESETS[name]
    start = Position.start(rules)
    for depth, count in enumerate(recorded()[name]["perft"], start=1):
        if depth > REFERENCE_DEPTH and count <= MAX_LIVE_NODES:
            assert perft(start, rules, depth) == count, (name, depth)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PRESETS))
def test_perft_against_recorded_deep(name: str) -> None:
    rules = PRESETS[name]
    start = Position.start(rules)
    for depth, count in enumerate(recorded()[name]["perft"], start=1):
        if count > MAX_LIVE_NODES:
            assert perft(start, rules, depth) == count, (name, depth)


def test_perft_edge_cases() -> None:
    rules = PRESETS["kalah"]
    start = Position.start(rules)
    assert perft(start, rules, 0) == ref.perft(start, rules, 0) == 1
    with pytest.raises(ValueError):
        perft(start, rules, -1)
    with pytest.raises(ValueError):
        ref.perft(start, rules, -1)
    finished = Position((0,) * 6, (1,) * 6, (20, 22))
    assert ref.is_over(finished, rules)
    assert perft(finished, rules, 0) == ref.perft(finished, rules, 0) == 1
    for depth in (1, 2):
        assert perft(finished, rules, depth) == ref.perft(finished, rules, depth) == 0


# ------------------------------------------------ boards beyond 8 houses or 255 seeds

BOARD_REFERENCE_DEPTH = 4  # the reference on 12 houses: ~20k sowings at depth 4


def recorded_boards() -> dict[str, Any]:
    boards: dict[str, Any] = json.loads(DATA.read_text())["boards"]
    return boards


def test_big_boards_are_recorded() -> None:
    """The big boards of the file are beyond the one-word board: 9+ houses or 256+ seeds,
    and at least one whose houses start with more seeds than a lap (2h+1) takes."""
    boards = recorded_boards()
    assert len(boards) >= 3
    laps = False
    for name, entry in boards.items():
        rules = Rules.from_json(entry["rules"])
        start = Position.start(rules)
        assert entry["start"] == start.compact(), name
        assert rules.houses > 8 or start.total_seeds > 255, name
        assert game.board_module(start) is _bigboard, name
        laps = laps or rules.seeds > 2 * rules.houses + 1
    assert laps


@pytest.mark.parametrize("name", sorted(json.loads(DATA.read_text())["boards"]))
def test_big_board_perft_against_reference_and_recorded(name: str) -> None:
    entry = recorded_boards()[name]
    rules = Rules.from_json(entry["rules"])
    start = Position.start(rules)
    for depth, count in enumerate(entry["perft"], start=1):
        if depth <= BOARD_REFERENCE_DEPTH:
            assert ref.perft(start, rules, depth) == count, (name, depth)
        if count <= MAX_LIVE_NODES:
            assert perft(start, rules, depth) == count, (name, depth)
