"""Honest bounds under a budget: an analysis that cannot prove the value spends a share of its
budget on null-window tests far from the estimate, and the bounds it proves hold."""

from __future__ import annotations

import pytest

from kalah_core import Rules
from kalah_core.position import parse_position
from kalah_core.solver import Engine

ENGINE = Engine(tt_mb=16)


@pytest.mark.parametrize(
    ("houses", "seeds", "value"),
    [(5, 5, 2), (4, 6, 0), (5, 4, 12)],  # published values (empty capture)
)
def test_budgeted_bounds_hold_and_narrow(houses: int, seeds: int, value: int) -> None:
    rules = Rules(houses=houses, seeds=seeds, capture="always")
    start = parse_position("start", rules)
    ENGINE.clear()
    analysis = ENGINE.analyse(start, rules, nodes=100_000)
    assert not analysis.exact
    assert analysis.lower <= value <= analysis.upper
    assert analysis.lower <= analysis.value <= analysis.upper
    for move in analysis.moves:
        assert move.upper <= analysis.upper
    # Futility alone bounds the start by every seed in the game: the tests prove much more.
    assert analysis.upper - analysis.lower < 2 * houses * seeds * 2 * 0.8
