"""The system tests of tests/engine/test_reference_props.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import strategies
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reference_props import BIG_GAMES, RANDOM_GAMES, START_GAMES, play_game

from kalah_core import (
    Position,
    Rules,
    _bigboard,
    game,
    perft,
)
from kalah_core import reference as ref
from kalah_core.position import MAX_SEEDS
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS


@settings(max_examples=START_GAMES)
@given(rules=strategies.rules(), seed=st.integers(0, 2**32 - 1))
def test_random_games_from_start(rules: Rules, seed: int) -> None:
    play_game(Position.start(rules), rules, seed)


@settings(max_examples=RANDOM_GAMES)
@given(drawn=strategies.rules_and_positions(), seed=st.integers(0, 2**32 - 1))
def test_random_games_from_random_positions(drawn: tuple[Rules, Position], seed: int) -> None:
    rules, position = drawn
    for depth in range(3):
        assert perft(position, rules, depth) == ref.perft(position, rules, depth), (position, depth)
    play_game(position, rules, seed)


@settings(max_examples=BIG_GAMES, deadline=None)
@given(rules=strategies.big_rules(), seed=st.integers(0, 2**32 - 1))
def test_big_board_games_from_start(rules: Rules, seed: int) -> None:
    start = Position.start(rules)
    assert game.board_module(start) is _bigboard
    play_game(start, rules, seed)


@settings(max_examples=BIG_GAMES, deadline=None)
@given(
    drawn=strategies.rules_and_positions(
        strategies.rules(max_houses=MAX_HOUSES, max_seeds=MAX_START_SEEDS), 0, MAX_SEEDS
    )
    .filter(lambda d: game.board_module(d[1]) is _bigboard)
    .filter(lambda d: max(d[1].south + d[1].north) > 2 * d[0].houses + 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_big_board_games_from_random_positions(drawn: tuple[Rules, Position], seed: int) -> None:
    """Random big positions with a house of more than a lap (2h+1) of seeds: every move of the
    position (the many-lap sowing among them) through both, then a random game."""
    rules, position = drawn
    for move in ref.legal_moves(position, rules):
        result = game.play(position, rules, move)
        expected = ref.play(position, rules, move)
        assert (result.after, result.extra_turn, result.captured, result.over) == expected
    for depth in range(3):
        assert perft(position, rules, depth) == ref.perft(position, rules, depth), (position, depth)
    play_game(position, rules, seed)
