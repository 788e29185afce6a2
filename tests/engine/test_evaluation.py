"""The depth-limited search's evaluations against a plain-Python reference.

At depth 1 every move's value is the leaf's evaluation of the position it leads to (negated
when the turn passes), so the root's move values show the evaluation itself."""

from __future__ import annotations

import pytest
import strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from kalah_core import Position, Rules, Side
from kalah_core import reference as ref
from kalah_core._search import DEFAULT_EVAL_WEIGHTS
from kalah_core.rules import MAX_HOUSES
from kalah_core.solver import Engine

ENGINE = Engine(tt_mb=8)
SIDES, FEATURES = 1, 2


def assert_depth_one_values(
    engine: Engine, position: Position, rules: Rules, kind: int, weights: tuple[int, ...]
) -> None:
    """Every move's depth-1 value is the evaluation of the position it leaves (for the mover
    when the turn passes, negated), unless that position ends the game."""
    for move in engine.analyse(position, rules, depth=1).moves:
        after, _, _, _ = ref.play(position, rules, move.move)
        if ref.is_over(after, rules):
            continue
        leaf = ref.evaluation(after, kind, weights)
        value = leaf if after.to_move is position.to_move else -leaf
        # an estimate is reported within the move's proven bounds (the seeds left to win)
        assert move.value == min(max(value, move.lower), move.upper), move.move


@settings(max_examples=300, deadline=None)
@given(
    strategies.rules_and_positions(
        strategies.rules(max_houses=MAX_HOUSES, max_seeds=12).filter(lambda r: not r.pie),
        max_total=300,
    ),
    st.sampled_from([SIDES, FEATURES]),
    st.lists(st.integers(-64, 64), min_size=5, max_size=5),
)
def test_depth_one_values_are_the_reference_evaluation(
    drawn: tuple[Rules, Position], kind: int, weights: list[int]
) -> None:
    rules, position = drawn
    if ref.is_over(position, rules):
        return
    ENGINE.searcher.eval_kind = kind
    ENGINE.searcher.eval_weights = tuple(weights)
    try:
        assert_depth_one_values(ENGINE, position, rules, kind, tuple(weights))
    finally:
        ENGINE.searcher.eval_kind = -1
        ENGINE.searcher.eval_weights = DEFAULT_EVAL_WEIGHTS


def test_weights_are_checked() -> None:
    searcher = Engine(tt_mb=1).searcher
    with pytest.raises(ValueError, match="eval_weights"):
        searcher.eval_weights = (1, 2, 3)
    with pytest.raises(ValueError, match="eval_weights"):
        searcher.eval_weights = (1, 2, 3, 4, 5000)
    with pytest.raises(ValueError, match="eval_kind"):
        searcher.eval_kind = 3
    searcher.eval_weights = (1, -2, 3, -4, 5)
    assert searcher.eval_weights == (1, -2, 3, -4, 5)


def test_the_sides_of_a_position_are_mirrored() -> None:
    """The reference's frame: the mover's house i faces the opponent's house n-1-i."""
    position = Position((0, 1, 0, 4, 0, 0), (3, 5, 0, 1, 0, 2), (3, 4), Side.SOUTH)
    # South: 2 (1 seed) lands in the empty 3, facing North's 4 (1 seed); 4 sows 1 past the store
    assert ref.side_features(position.south, position.north) == (0, 2, 1)
    # North: 2 (5 seeds) ends in the store; 4 lands in the empty 5, facing South's 2; 6 sows 1 past
    assert ref.side_features(position.north, position.south) == (1, 2, 1)


@settings(max_examples=200, deadline=None)
@given(
    strategies.rules_and_positions(
        strategies.rules(min_houses=4, max_houses=MAX_HOUSES, max_seeds=12).filter(
            lambda r: not r.pie
        ),
        min_total=8,
        max_total=300,
    )
)
def test_the_board_chooses_the_evaluation(case: tuple[Rules, Position]) -> None:
    """By default the house-seed term on up to 6 houses, the features with their default
    weights beyond (benchmarks/eval_match.py measured both)."""
    rules, position = case
    if ref.is_over(position, rules):
        return
    kind = SIDES if rules.houses <= 6 else FEATURES
    assert_depth_one_values(Engine(tt_mb=1), position, rules, kind, DEFAULT_EVAL_WEIGHTS)
