"""The move notation of seed 000: the docs/rules.md test vectors, errors, and round trips."""

from __future__ import annotations

import contextlib
import random

import pytest
import strategies
from figures import tried
from hypothesis import given
from hypothesis import strategies as st

from kalah_core import (
    Game,
    IllegalMoveError,
    InvalidNotationError,
    KalahError,
    Position,
    Rules,
    Side,
)
from kalah_core.finnish import parse_fi, write_fi

KALAHA = Rules.preset("kalaha")
PIE = Rules.preset("kalah-pie")
EXAMPLE = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
EXAMPLE_CANONICAL = "45-46, 1*-5, 2-63*, 6-561646562*, 4-3, 656-"


def board(text: str, to_move: Side) -> Position:
    """A position from the docs/rules.md board form: South houses 1..h, South store | North's."""
    south, north = ([int(n) for n in half.split()] for half in text.split("|"))
    return Position(tuple(south[:-1]), tuple(north[:-1]), (south[-1], north[-1]), to_move)


# ------------------------------------------------------------------------ docs/rules.md vectors


def test_vector_41() -> None:
    game = Game.parse_fi("(41*-)", KALAHA)
    assert game.position == board("0 4 4 0 4 4 5 | 3 3 0 3 3 3 0", Side.NORTH)
    assert game.moves == [4, 1]
    assert game.history[0].extra_turn
    assert game.history[1].captured == 4  # the capturing seed and the 3 facing it
    assert game.position.stores[0] == 5
    assert game.fi() == "41*-"


def test_vector_five_rounds() -> None:
    game = Game.parse_fi("(1-2, 5-31, 2-5, 3-2, 2*-1*)", KALAHA)
    assert game.position == board("1 0 0 7 0 6 10 | 0 0 2 0 0 5 5", Side.SOUTH)
    assert game.outcome() is None
    assert game.fi() == "1-2, 5-31, 2-5, 3-2, 2*-1*"


def test_example_game() -> None:
    game = Game.parse_fi(EXAMPLE, KALAHA)
    assert game.position.south == (0,) * 6
    outcome = game.outcome()
    assert outcome is not None
    assert outcome.score == (12, 24)
    assert outcome.winner is Side.NORTH
    assert game.legal_moves() == []
    assert game.fi() == EXAMPLE_CANONICAL
    again = Game.parse_fi(EXAMPLE_CANONICAL, KALAHA)
    assert [r.after for r in again.history] == [r.after for r in game.history]


def test_example_game_with_parentheses_and_spacing() -> None:
    game = Game.parse_fi("(" + EXAMPLE.replace(", ", ",") + ")", KALAHA)
    assert game.position == Game.parse_fi(EXAMPLE, KALAHA).position


def test_missing_star_is_accepted() -> None:
    # The article leaves the '*' off North's last capture in "-561646562".
    plain = Game.parse_fi(EXAMPLE.replace("*", ""), KALAHA)
    assert plain.position == Game.parse_fi(EXAMPLE, KALAHA).position
    assert Game.parse_fi("41-", KALAHA).position == Game.parse_fi("41*-", KALAHA).position


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("1*-", "round 1, south sowing 1"),
        ("4*1*-", "round 1, south sowing 4"),
        ("41*-1*", "round 1, north sowing 1"),
        ("45-46, 1*-5*", "round 2, north sowing 5"),
    ],
)
def test_star_on_a_non_capture_is_rejected(text: str, where: str) -> None:
    with pytest.raises(IllegalMoveError, match="captures nothing") as error:
        Game.parse_fi(text, KALAHA)
    assert where in str(error.value)
    assert error.value.field == "move"


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "where", "why"),
    [
        ("1-2, 1-", "round 2, south sowing 1", "house 1 is empty"),
        ("7-", "round 1, south sowing 7", "1..6"),
        ("-1", "round 1, north sowing 1", "it is south's turn"),
        ("1-2, -3", "round 2, north sowing 3", "it is south's turn"),
        ("4-1", "round 1, south sowing 4", "write its next sowing with it"),
        ("14-", "round 1, south sowing 1", "the turn passes"),
        ("1-2, 5-13", "round 2, north sowing 1", "the turn passes"),
        ("45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-, 1-", "round 9, south sowing 1", "over"),
        ("45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 6561-", "round 8, south sowing 1", "over"),
        ("1-swap", "round 1, north sowing 'swap'", "no pie rule"),
    ],
)
def test_illegal_sowings_are_named(text: str, where: str, why: str) -> None:
    with pytest.raises(IllegalMoveError) as error:
        Game.parse_fi(text, KALAHA)
    message = str(error.value)
    assert where in message, message
    assert why in message, message
    assert error.value.field == "move"


def test_extra_turn_must_be_written_with_its_turn() -> None:
    # A sowing ending in the store may end the text (a game in progress), not a turn.
    assert Game.parse_fi("4-", KALAHA).position.to_move is Side.SOUTH
    with pytest.raises(IllegalMoveError, match="write its next sowing with it"):
        Game.parse_fi("4-3", KALAHA)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "()",
        "41",
        "1--2",
        "1-2,",
        "1-2,,3-4",
        "0-1",
        "1-2)",
        "(1-2",
        "1-x",
        "1-2;3-4",
        "1-2*3**",
    ],
)
def test_malformed_text(text: str) -> None:
    with pytest.raises(InvalidNotationError) as error:
        Game.parse_fi(text, KALAHA)
    assert error.value.field == "game"
    assert repr(text) in str(error.value)


def test_too_long_text() -> None:
    with pytest.raises(InvalidNotationError, match="longer"):
        parse_fi("1-2, " * 2000)


def test_parse_fi_reports_sides_and_rounds() -> None:
    turns = parse_fi("45-46, 1*-5, 2-, -63*")
    assert [[(s.move, s.side, s.starred, s.round) for s in turn] for turn in turns] == [
        [(4, Side.SOUTH, False, 1), (5, Side.SOUTH, False, 1)],
        [(4, Side.NORTH, False, 1), (6, Side.NORTH, False, 1)],
        [(1, Side.SOUTH, True, 2)],
        [(5, Side.NORTH, False, 2)],
        [(2, Side.SOUTH, False, 3)],
        [(6, Side.NORTH, False, 4), (3, Side.NORTH, True, 4)],
    ]


def test_failed_replay_leaves_the_game_at_the_last_legal_sowing() -> None:
    game = Game(KALAHA)
    with pytest.raises(IllegalMoveError):
        game.push_fi("1-2, 1*-")
    assert game.moves == [1, 2]


def test_push_fi_continues_a_game() -> None:
    game = Game.parse_fi("45-46", KALAHA)
    game.push_fi("1*-5")
    game.push_fi("2-")
    game.push_fi("-63*")
    assert game.fi() == "45-46, 1*-5, 2-63*"
    assert game.position == Game.parse_fi("45-46, 1*-5, 2-63*", KALAHA).position


def test_from_a_position() -> None:
    start = board("1 0 0 7 0 6 10 | 0 0 2 0 0 5 5", Side.SOUTH)
    game = Game.parse_fi("4-", KALAHA, start)
    assert game.start == start
    assert game.history[0].before == start


# ----------------------------------------------------------------------------- the pie swap


def test_swap_in_a_pie_game() -> None:
    game = Game.parse_fi("1-swap", PIE)
    assert game.moves == [1, "swap"]
    after_one = game.history[0].after
    assert after_one.swap_available and after_one.to_move is Side.NORTH
    # The players exchange sides as they stand: the board stays, the first player now moves
    # from North, and the swap is spent.
    assert game.position == Position(after_one.south, after_one.north, (0, 0), Side.NORTH, False)
    assert game.fi() == "1-swap"
    game.push_fi("-3")
    assert game.fi() == "1-swap, -3"
    assert Game.parse_fi("1-swap, -3", PIE).position == game.position


def test_swap_after_an_extra_turn() -> None:
    game = Game.parse_fi("31-swap", PIE)
    assert game.moves == [3, 1, "swap"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("swap-", "North's first turn"),
        ("1-2, 1-swap", "house 1 is empty"),
        ("1-2, 3-swap", "North's first turn"),
        ("1-swap1", "the turn passes"),
        ("1-1swap", "the turn passes"),
        ("1-swap, 1-", "north's turn"),
    ],
)
def test_bad_swaps(text: str, why: str) -> None:
    with pytest.raises(IllegalMoveError, match=why):
        Game.parse_fi(text, PIE)


# ----------------------------------------------------------------------------- properties


@given(strategies.rules(max_houses=12), st.randoms(use_true_random=False), st.integers(0, 400))
def test_written_games_replay_to_the_same_positions(
    rules: Rules, rng: random.Random, length: int
) -> None:
    tried("Finnish notation: format -> parse")
    game = Game(rules)
    for _ in range(length):
        moves = game.legal_moves()
        if not moves:
            break
        game.push(rng.choice(moves))
    text = game.fi()
    if not game.history:
        assert text == ""
        return
    again = Game.parse_fi(text, rules)
    assert again.moves == game.moves
    assert [r.after for r in again.history] == [r.after for r in game.history]
    assert again.fi() == text
    assert write_fi(again.history) == text
    # The '*' is optional: the same game without any still replays.
    assert Game.parse_fi(text.replace("*", ""), rules).position == game.position
    # The tail of the game from any position in it, whoever is to move there.
    k = rng.randrange(len(game.history))
    tail = game.history[k:]
    rest = Game.parse_fi(write_fi(tail), rules, tail[0].before)
    assert [r.after for r in rest.history] == [r.after for r in tail]


GAME_ALPHABET = "123456789*-, ()swap0x\n"


@given(st.text(max_size=200) | st.text(alphabet=GAME_ALPHABET, max_size=200))
def test_arbitrary_text_raises_only_kalah_errors(text: str) -> None:
    tried("Finnish notation: arbitrary text")
    for rules in (KALAHA, PIE):
        with contextlib.suppress(KalahError):
            Game.parse_fi(text, rules)
    with contextlib.suppress(KalahError):
        parse_fi(text)


def test_wrapped_error_states_the_reason_once() -> None:
    with pytest.raises(IllegalMoveError) as caught:
        Game.parse_fi("7-", Rules.preset("kalaha"))
    message = str(caught.value)
    assert message.count("illegal move") == 1
    assert message.endswith("round 1, south sowing 7: houses are numbered 1..6")


def test_houses_ten_to_twelve_are_letters() -> None:
    """On 10..12 houses a sowing of house 10, 11 or 12 is one letter (a, b, c), so a turn's
    sowings still need no separator; games of up to 9 houses are written as before."""
    rules = Rules.preset("kgp", houses=12, seeds=1)
    game = Game(rules)
    game.push(12)  # the last seed lands in the store: an extra turn
    game.push(10)  # then house 10 into house 11
    assert game.fi() == "ca-"
    again = Game.parse_fi("ca-", rules)
    assert again.moves == [12, 10] and again.position == game.position
    assert Game.parse_fi("(ca-)", rules).position == game.position
    with pytest.raises(InvalidNotationError, match="'d'"):
        parse_fi("d-1")
    with pytest.raises(IllegalMoveError, match=r"1\.\.10"):
        Game.parse_fi("c-", Rules(houses=10, seeds=1))
