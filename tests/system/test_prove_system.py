"""The system tests of tests/engine/test_prove.py, whose helpers they import: ``kalah prove``
on mid-game positions (seconds each, against the reference's minimax)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_prove import BUDGET, quiet

from kalah_core import reference
from kalah_core.game import legal_moves, play
from kalah_core.position import Position
from kalah_core.prove import prove_position
from kalah_core.rules import Rules


def midgame(rules: Rules, picks: list[int]) -> Position:
    """The position the moves ``picks`` (each modulo the moves there) lead to; a pick that
    would end the game is passed over."""
    position = Position.start(rules)
    for pick in picks:
        moves = legal_moves(position, rules)
        result = play(position, rules, moves[pick % len(moves)])
        position = position if result.over else result.after
    return position


@settings(max_examples=20)
@given(
    st.sampled_from(
        [
            Rules(houses=4, seeds=2),
            Rules(houses=4, seeds=2, capture="always", end="mover-empty"),
            Rules(houses=3, seeds=4, capture="always"),
        ]
    ),
    # 5 moves at least: the reference minimax takes seconds nearer the start
    st.lists(st.integers(0, 5), min_size=5, max_size=12),
)
def test_midgame_positions_proven_equal_the_reference_minimax(
    rules: Rules, picks: list[int]
) -> None:
    position = midgame(rules, picks)
    proof = prove_position(rules, position, BUDGET, stream=quiet())
    assert proof.exact
    assert proof.lower == reference.value(position, rules)
