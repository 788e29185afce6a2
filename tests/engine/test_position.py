"""Positions: start positions, validity flags, the compact notation and the JSON form."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from typing import Any

import pytest
from figures import tried
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_positions, json_values, positions

from kalah_core import (
    MAX_SEEDS,
    InvalidNotationError,
    InvalidPositionError,
    KalahError,
    Position,
    Rules,
    Side,
    Status,
    parse_position,
)

KALAH = Rules.preset("kalah")
PIE = Rules.preset("kalah-pie")

# ----------------------------------------------------------------------------- start positions


@pytest.mark.parametrize(
    ("rules", "compact"),
    [
        (KALAH, "444444-0-444444-0-s"),
        (PIE, "444444-0-444444-0-sp"),
        (Rules.preset("kalaha"), "333333-0-333333-0-s"),
        (Rules.preset("kalah-ru"), "666666-0-666666-0-s"),
        (Rules.preset("piet-hein", seeds=3), "333333-0-333333-0-s"),
        (Rules(houses=1, seeds=1), "1-0-1-0-s"),
        (Rules(houses=8, seeds=10), "aaaaaaaa-0-aaaaaaaa-0-s"),
        (Rules.preset("kgp", houses=12, seeds=12), "cccccccccccc-0-cccccccccccc-0-s"),
        (Rules(houses=12, seeds=24), "oooooooooooo-0-oooooooooooo-0-s"),
    ],
)
def test_start(rules: Rules, compact: str) -> None:
    start = Position.start(rules)
    assert start.compact() == compact
    assert str(start) == compact
    assert start.south == start.north == (rules.seeds,) * rules.houses
    assert start.stores == (0, 0)
    assert start.to_move is Side.SOUTH
    assert start.swap_available is rules.pie
    assert start.houses == rules.houses
    assert start.total_seeds == rules.total_seeds
    assert start.status(rules) == Status.VALID
    assert start.is_valid(rules)
    assert Position.parse(compact) == start
    for text in ("start", " start "):
        assert parse_position(text, rules) == start


def test_accessors() -> None:
    p = Position((1, 2, 3), (4, 5, 6), (7, 8), Side.NORTH)
    assert p.side(Side.SOUTH) == (1, 2, 3)
    assert p.side(Side.NORTH) == (4, 5, 6)
    assert (p.store(Side.SOUTH), p.store(Side.NORTH)) == (7, 8)
    assert p.total_seeds == 36
    assert Side.SOUTH.other is Side.NORTH and Side.NORTH.other is Side.SOUTH


# ----------------------------------------------------------------------------- validity


@pytest.mark.parametrize(
    ("position", "rules", "status", "words"),
    [
        (Position((4, 4), (4, 4)), None, Status.VALID, ()),
        (Position((-1, 4), (4, 4)), None, Status.NEGATIVE_COUNT, ("negative",)),
        (Position((4, 4), (4, 4), (0, -2)), None, Status.NEGATIVE_COUNT, ("negative",)),
        (Position((500, 4), (4, 4), (48, 45)), None, Status.TOO_MANY_SEEDS, ("600",)),
        (Position((4, 4), (4, 4, 4)), None, Status.SIDES_DIFFER, ("different",)),
        (Position((), ()), None, Status.HOUSE_COUNT, ("houses",)),
        (Position((1,) * 13, (1,) * 13), None, Status.HOUSE_COUNT, ("houses", "1..12")),
        (Position((1,) * 12, (1,) * 12), None, Status.VALID, ()),
        (Position((200, 4), (4, 4), (48, 0)), None, Status.VALID, ()),
        (Position((4, 4), (4, 4)), KALAH, Status.HOUSE_COUNT, ("houses", "rules have 6")),
        (
            Position((4,) * 6, (4,) * 6, swap_available=True),
            KALAH,
            Status.SWAP_WITHOUT_PIE,
            ("swap_available", "pie"),
        ),
        (
            Position((4,) * 6, (4,) * 6, (1, 1), Side.NORTH, True),
            PIE,
            Status.SWAP_AFTER_FIRST_TURN,
            ("swap_available", "North's store"),
        ),
        (Position((4.0, 4), (4, 4)), None, Status.NOT_AN_INTEGER, ("integer",)),  # type: ignore[arg-type]
        (Position((True, 4), (4, 4)), None, Status.NOT_AN_INTEGER, ("integer",)),
    ],
)
def test_status_and_validate(
    position: Position, rules: Rules | None, status: Status, words: tuple[str, ...]
) -> None:
    assert position.status(rules) == status
    assert position.is_valid(rules) is (status == Status.VALID)
    if status == Status.VALID:
        assert position.validate(rules) is position
        return
    with pytest.raises(InvalidPositionError) as error:
        position.validate(rules)
    message = str(error.value)
    assert message.startswith("invalid position ")
    for word in words:
        assert word in message, (word, message)


def test_several_problems_at_once() -> None:
    p = Position((-1, 600), (4, 4, 4), (0, 3), Side.NORTH, True)
    assert p.status(KALAH) == (
        Status.NEGATIVE_COUNT
        | Status.TOO_MANY_SEEDS
        | Status.SIDES_DIFFER
        | Status.HOUSE_COUNT
        | Status.SWAP_WITHOUT_PIE
        | Status.SWAP_AFTER_FIRST_TURN
    )


def test_swap_flag_without_rules_is_fine_before_north_sows() -> None:
    # Without rules the pie option is unknown; only the stores can show the flag is stale.
    assert Position((4,) * 6, (4,) * 6, (3, 0), Side.NORTH, True).is_valid()
    assert Position((4,) * 6, (4,) * 6, (3, 0), Side.NORTH, True).is_valid(PIE)


def test_any_total_up_to_max_seeds_is_valid() -> None:
    assert Position((MAX_SEEDS,), (0,)).is_valid()
    assert not Position((MAX_SEEDS,), (1,)).is_valid()
    assert Position((4,) * 6, (4,) * 6, (100, 100)).is_valid(KALAH)


# ----------------------------------------------------------------------------- compact notation


@pytest.mark.parametrize(
    ("count", "spelling"),
    [
        (0, "0"),
        (9, "9"),
        (10, "a"),
        (35, "z"),
        (36, "A"),
        (61, "Z"),
        (62, "~10"),
        (63, "~11"),
        (123, "~1Z"),
        (124, "~20"),
        (255, "~47"),
        (600, "~9G"),
    ],
)
def test_count_digits(count: int, spelling: str) -> None:
    p = Position((count,), (0,))
    assert p.compact() == f"{spelling}-0-0-0-s"
    assert Position.parse(p.compact()) == p


def test_compact_examples() -> None:
    p = Position((0, 5, 5, 5, 5, 4), (4, 4, 4, 4, 4, 4), (0, 0), Side.NORTH)
    assert p.compact() == "055554-0-444444-0-n"
    p = Position((10, 0, 36, 62), (1, 2, 3, 4), (7, 0), Side.NORTH, True)
    assert p.compact() == "a0A~10-7-1234-0-np"
    assert Position.parse("a0A~10-7-1234-0-np") == p
    p = Position((10, 0, 36, 62), (1, 2, 3, 4), (7, 100), Side.SOUTH)
    assert p.compact() == "a0A~10-7-1234-100-s"
    assert Position.parse("a0A~10-7-1234-100-s") == p


@pytest.mark.parametrize(
    "text",
    [
        "~0a4444-0-444444-0-s",  # '~' for a count below 62
        "~094444-0-444444-0-s",
        "444444-00-444444-0-s",  # leading zero in a store
        "444444-0-444444-01-s",
        "444444-+1-444444-0-s",
        "444444-0-444444-0-S",  # side in upper case
        "444444-0-444444-0-south",
        "444444-0-444444-0-ps",
        "444444-0-444444-0-pn",
        "444444-0-444444-0-spp",
        "444444-0-444444-0-",
        "444444-0-444444-0",
        "444444-0-444444-s",
        " 444444-0-444444-0-s",
        "444444-0-444444-0-s ",
        "444444-0-444444-0-s\n",
        "444444_0_444444_0_s",
        "\uff1444444-0-444444-0-s",  # a full-width digit
        "-0-444444-0-s",
        "4444444444444-0-4444444444444-0-s",  # thirteen houses
        "~4-0-4-0-s",
        "4~-0-4-0-s",
        "~~00-0-4-0-s",
        "start",
        "",
    ],
)
def test_rejects_non_canonical_or_malformed(text: str) -> None:
    with pytest.raises(InvalidNotationError) as error:
        Position.parse(text)
    assert error.value.field == "position"
    assert repr(text) in str(error.value) or len(text) > 60


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("44-0-444-0-s", "different"),
        ("~9G-0-1-0-s", "600"),
        ("4-999-4-0-s", "600"),
        ("4-0-4-1-sp", "North's store"),
    ],
)
def test_parse_validates(text: str, words: str) -> None:
    with pytest.raises(InvalidPositionError, match=words):
        Position.parse(text)


def test_parse_rejects_non_strings() -> None:
    for value in (None, b"444444-0-444444-0-s", 444444, ["4"]):
        with pytest.raises(InvalidNotationError):
            Position.parse(value)  # type: ignore[arg-type]


def test_parse_rejects_very_long_text() -> None:
    with pytest.raises(InvalidNotationError, match="longer"):
        Position.parse("4" * 10_000 + "-0-4-0-s")


# ----------------------------------------------------------------------------- JSON form


def test_json_form() -> None:
    p = Position((1, 2, 3), (4, 5, 6), (7, 8), Side.NORTH, False)
    data = p.to_json()
    assert data == {
        "south": [1, 2, 3],
        "north": [4, 5, 6],
        "stores": [7, 8],
        "to_move": "north",
        "swap_available": False,
    }
    assert json.loads(json.dumps(data)) == data
    assert Position.from_json(data) == p
    start = Position.start(PIE).to_json()
    assert start["swap_available"] is True and start["to_move"] == "south"


def test_json_defaults() -> None:
    p = Position.from_json({"south": [4, 4], "north": [4, 4]})
    assert p == Position((4, 4), (4, 4), (0, 0), Side.SOUTH, False)


GOOD: dict[str, Any] = {"south": [4, 4], "north": [4, 4], "stores": [0, 0], "to_move": "south"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"south": None}, "position.south"),
        ({"south": "44"}, "position.south"),
        ({"south": []}, "position.south"),
        ({"south": [1] * 13}, "position.south"),
        ({"south": [4, -1]}, "position.south"),
        ({"south": [4, 601]}, "position.south"),
        ({"south": [4, 4.0]}, "position.south"),
        ({"south": [4, True]}, "position.south"),
        ({"north": [4, "4"]}, "position.north"),
        ({"north": {"0": 4}}, "position.north"),
        ({"stores": [0]}, "position.stores"),
        ({"stores": [0, 0, 0]}, "position.stores"),
        ({"stores": [0, -1]}, "position.stores"),
        ({"stores": "0-0"}, "position.stores"),
        ({"to_move": "South"}, "position.to_move"),
        ({"to_move": "s"}, "position.to_move"),
        ({"to_move": None}, "position.to_move"),
        ({"swap_available": 1}, "position.swap_available"),
        ({"swap_available": "true"}, "position.swap_available"),
        ({"side": "north"}, "position.side"),
        ({"pie": True, "board": []}, "position.board"),
    ],
)
def test_json_errors_name_the_field(change: dict[str, Any], field: str) -> None:
    data = GOOD | change
    with pytest.raises(InvalidPositionError) as error:
        Position.from_json(data)
    assert error.value.field == field
    assert field.removeprefix("position.") in str(error.value)


def test_json_missing_field() -> None:
    with pytest.raises(InvalidPositionError) as error:
        Position.from_json({"south": [4, 4]})
    assert error.value.field == "position.north"


def test_json_impossible_position() -> None:
    with pytest.raises(InvalidPositionError, match="different"):
        Position.from_json({"south": [4, 4], "north": [4, 4, 4]})
    with pytest.raises(InvalidPositionError, match="600"):
        Position.from_json({"south": [500, 4], "north": [100, 4]})


@pytest.mark.parametrize("value", [None, [], "444444-0-444444-0-s", 3, [["south", [4]]]])
def test_json_must_be_an_object(value: object) -> None:
    with pytest.raises(InvalidPositionError):
        Position.from_json(value)


# ----------------------------------------------------------------------------- parse_position


def test_parse_position_forms() -> None:
    p = Position((0, 5, 5, 5, 5, 4), (4,) * 6, (0, 0), Side.NORTH)
    assert parse_position("055554-0-444444-0-n", KALAH) == p
    assert parse_position(json.dumps(p.to_json()), KALAH) == p
    assert parse_position("  " + json.dumps(p.to_json()) + "\n", KALAH) == p
    assert parse_position(p.to_json(), KALAH) == p
    assert parse_position(p, KALAH) == p
    assert parse_position("start", PIE) == Position.start(PIE)


def test_parse_position_checks_the_rules() -> None:
    with pytest.raises(InvalidPositionError, match="rules have 6"):
        parse_position("4444-0-4444-0-s", KALAH)
    assert parse_position("4444-0-4444-0-s", Rules(houses=4)).houses == 4
    with pytest.raises(InvalidPositionError, match="pie"):
        parse_position("444444-0-444444-0-sp", KALAH)
    with pytest.raises(InvalidPositionError, match="pie"):
        parse_position({"south": [4] * 6, "north": [4] * 6, "swap_available": True}, KALAH)
    with pytest.raises(InvalidPositionError, match="rules have 6"):
        parse_position(Position((4,), (4,)), KALAH)


@pytest.mark.parametrize("text", ['{"south": [4, 4', "{}", '{"south": [4, 4]} x', "[1, 2]"])
def test_parse_position_bad_json_text(text: str) -> None:
    with pytest.raises(KalahError):
        parse_position(text, KALAH)


# ----------------------------------------------------------------------------- properties


@given(positions())
def test_compact_round_trip(p: Position) -> None:
    tried("compact notation: format -> parse")
    assert p.is_valid()
    text = p.compact()
    assert Position.parse(text) == p
    assert urllib.parse.quote(text, safe="") == text
    assert len(text) <= 64


@given(positions())
def test_json_round_trip(p: Position) -> None:
    tried("JSON form: format -> parse")
    data = p.to_json()
    assert Position.from_json(data) == p
    assert Position.from_json(json.loads(json.dumps(data))) == p
    assert parse_position(json.dumps(data), Rules(houses=p.houses, pie=p.swap_available)) == p


NOTATION_ALPHABET = '0123456789abcxyzABCXYZ~-snp {}[]":,.+truefalsnorthswap_availablestores'


def only_kalah_errors(call: Any, *args: object) -> None:
    with contextlib.suppress(KalahError):
        call(*args)


@given(st.text() | st.text(alphabet=NOTATION_ALPHABET))
def test_arbitrary_text_raises_only_kalah_errors(text: str) -> None:
    tried("position text (compact, JSON text): arbitrary")
    only_kalah_errors(Position.parse, text)
    only_kalah_errors(Position.from_json, text)
    only_kalah_errors(parse_position, text, KALAH)
    only_kalah_errors(parse_position, "{" + text, KALAH)


@given(json_values() | json_positions())
def test_arbitrary_json_raises_only_kalah_errors(data: object) -> None:
    tried("JSON form: arbitrary values")
    only_kalah_errors(Position.from_json, data)
    only_kalah_errors(parse_position, data, KALAH)
    only_kalah_errors(parse_position, json.dumps(data), KALAH)


# ----------------------------------------------------------------------------- hostile JSON text


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deeply_nested_json_text(depth: int) -> None:
    # 2000 levels fit the length limit and overflow the JSON decoder's recursion limit.
    with pytest.raises(InvalidPositionError):
        parse_position('{"south": ' + "[" * depth + "]" * depth + "}", KALAH)


@pytest.mark.parametrize("digits", [4_000, 5_000])  # below and above int()'s digit limit
def test_huge_integer_in_json_text(digits: int) -> None:
    with pytest.raises(InvalidPositionError):
        parse_position('{"south": [' + "1" * digits + "]}", KALAH)


def test_json_object_with_non_string_keys() -> None:
    with pytest.raises(InvalidPositionError) as error:
        Position.from_json({1: 2, "x": 3})
    assert error.value.field == "position.1"
