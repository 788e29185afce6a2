"""Rule options and presets: exactly the table of docs/rules.md, overrides, JSON form, errors."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from figures import tried
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values

from kalah_core import PRESETS, InvalidRulesError, KalahError, Position, Rules, _bigboard
from kalah_core.position import MAX_SEEDS
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS, OPTION_DOCS, PRESET_DOCS

# The presets table of docs/rules.md, column for column.
TABLE = {
    "kalah": (6, 4, "nonempty", "either-side-empty", "owner", False, False),
    "kalaha": (6, 3, "nonempty", "mover-empty", "owner", False, False),
    "kalah-ru": (6, 6, "nonempty", "mover-empty", "empty-side", True, False),
    "piet-hein": (6, 6, "always", "either-side-empty", "owner", False, False),
    "kalah-pie": (6, 4, "nonempty", "either-side-empty", "owner", False, True),
    "kgp": (8, 8, "nonempty", "either-side-empty", "owner", True, False),
}
OPTIONS = ("houses", "seeds", "capture", "end", "remaining", "majority", "pie")


def as_row(rules: Rules) -> tuple[Any, ...]:
    return tuple(getattr(rules, option) for option in OPTIONS)


@pytest.mark.parametrize("name", TABLE)
def test_presets_match_the_table(name: str) -> None:
    assert as_row(Rules.preset(name)) == TABLE[name]
    assert as_row(PRESETS[name]) == TABLE[name]
    assert Rules.preset(name).preset_name == name


def test_no_other_presets() -> None:
    assert set(PRESETS) == set(TABLE)


def test_default_is_kalah() -> None:
    assert Rules() == Rules.preset() == Rules.preset("kalah") == Rules.from_json(None)
    assert Rules().total_seeds == 48


def test_presets_are_distinct() -> None:
    assert len({Rules.preset(name) for name in TABLE}) == len(TABLE)
    assert len({Rules.preset(name).key for name in TABLE}) == len(TABLE)


def test_overrides() -> None:
    rules = Rules.preset("kalaha", seeds=5, houses=4)
    assert as_row(rules) == (4, 5, "nonempty", "mover-empty", "owner", False, False)
    assert rules.preset_name is None
    assert Rules.preset("piet-hein", seeds=3).capture == "always"
    assert Rules.preset("kalah", pie=True) == Rules.preset("kalah-pie")
    assert Rules.preset("kalah-pie", pie=False) == Rules.preset("kalah")
    assert Rules().replace(capture="always", seeds=6) == Rules.preset("piet-hein")


@pytest.mark.parametrize("houses", [1, 8, 12])
@pytest.mark.parametrize("seeds", [1, 10, 24])
def test_extreme_counts_allowed(houses: int, seeds: int) -> None:
    rules = Rules(houses=houses, seeds=seeds)
    assert rules.total_seeds == 2 * houses * seeds
    assert Position.start(rules).is_valid(rules)


def test_limits_come_from_one_place() -> None:
    """RULES.md asks for 1..12 houses and 1..24 seeds; the biggest start fits the engine."""
    assert (MAX_HOUSES, MAX_START_SEEDS) == (12, 24)
    assert 2 * MAX_HOUSES * MAX_START_SEEDS <= MAX_SEEDS
    assert MAX_HOUSES == _bigboard.BOARD_MAX_HOUSES
    assert MAX_SEEDS == _bigboard.BOARD_MAX_SEEDS
    assert f"1..{MAX_HOUSES}" in OPTION_DOCS["houses"]
    assert f"1..{MAX_START_SEEDS}" in OPTION_DOCS["seeds"]


def test_kgp_is_kalah_with_majority() -> None:
    """What KGP servers play: the kalah options plus majority (RULES.md, its 8x8 default)."""
    assert Rules.preset("kgp") == Rules.preset("kalah", houses=8, seeds=8, majority=True)
    assert "KGP" in PRESET_DOCS["kgp"] and "half" in PRESET_DOCS["kgp"]


def test_from_json_forms() -> None:
    assert Rules.from_json("kalaha") == Rules.preset("kalaha")
    assert Rules.from_json({"preset": "kalah-ru"}) == Rules.preset("kalah-ru")
    assert Rules.from_json({"preset": "kalaha", "seeds": 4}) == Rules.preset("kalaha", seeds=4)
    assert Rules.from_json({"capture": "always"}) == Rules(capture="always")
    assert Rules.from_json({}) == Rules()


@pytest.mark.parametrize("name", TABLE)
def test_json_round_trip(name: str) -> None:
    rules = Rules.preset(name)
    assert Rules.from_json(rules.to_json()) == rules


def test_to_json_is_normalized() -> None:
    data = Rules.preset("kalaha").to_json()
    assert data == {
        "houses": 6,
        "seeds": 3,
        "capture": "nonempty",
        "end": "mover-empty",
        "remaining": "owner",
        "majority": False,
        "pie": False,
    }
    # Different spellings of the same rules give the same JSON and key.
    spellings = [
        Rules.from_json("kalaha"),
        Rules.from_json({"preset": "kalah", "seeds": 3, "end": "mover-empty"}),
        Rules.from_json({"preset": "kalaha", "seeds": 3}),
        Rules(seeds=3, end="mover-empty"),
    ]
    assert all(r.to_json() == data for r in spellings)
    assert len({r.key for r in spellings}) == 1
    assert list(data) == list(OPTIONS)


def test_immutable() -> None:
    rules = Rules.preset("kalah")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.seeds = 5  # type: ignore[misc]
    rules.replace(seeds=5)
    assert rules.seeds == 4
    assert PRESETS["kalah"].seeds == 4
    assert hash(rules) == hash(Rules())


def check_error(error: pytest.ExceptionInfo[InvalidRulesError], option: str, *words: str) -> None:
    assert isinstance(error.value, KalahError)
    assert isinstance(error.value, ValueError)
    assert error.value.option == option
    assert error.value.field == option
    message = str(error.value)
    assert repr(option) in message
    for word in words:
        assert word in message, (word, message)


def test_unknown_preset() -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.preset("oware")
    check_error(error, "preset", "'oware'", *TABLE)
    with pytest.raises(InvalidRulesError) as error:
        Rules.from_json("oware")
    check_error(error, "preset", *TABLE)
    with pytest.raises(InvalidRulesError) as error:
        Rules.from_json({"preset": 3})
    check_error(error, "preset")


def test_unknown_option() -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.preset("kalah", stores=2)
    check_error(error, "stores", *OPTIONS)
    with pytest.raises(InvalidRulesError) as error:
        Rules.from_json({"preset": "kalah", "sides": 3})
    check_error(error, "sides", *OPTIONS)


@pytest.mark.parametrize(
    ("option", "value"),
    [("houses", 0), ("houses", 13), ("houses", -1), ("seeds", 0), ("seeds", 25), ("seeds", 100)],
)
def test_out_of_range_counts(option: str, value: int) -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.preset("kalah", **{option: value})
    check_error(error, option, str(value), "1..12" if option == "houses" else "1..24")


@pytest.mark.parametrize("value", ["6", 6.0, True, None, [6]])
def test_counts_must_be_integers(value: object) -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.from_json({"houses": value})
    check_error(error, "houses", "integer")


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("capture", "empty", ("'nonempty'", "'always'")),
        ("end", "never", ("'either-side-empty'", "'mover-empty'")),
        ("remaining", "split", ("'owner'", "'empty-side'")),
        ("capture", None, ("'nonempty'", "'always'")),
    ],
)
def test_bad_choice(option: str, value: object, allowed: tuple[str, ...]) -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.preset("kalah", **{option: value})
    check_error(error, option, repr(value), *allowed)


@pytest.mark.parametrize("option", ["majority", "pie"])
@pytest.mark.parametrize("value", [1, 0, "true", "yes", None])
def test_non_bool(option: str, value: object) -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.from_json({option: value})
    check_error(error, option, "true or false")


@pytest.mark.parametrize("data", [3, 2.5, ["kalah"], True])
def test_from_json_wrong_type(data: object) -> None:
    with pytest.raises(InvalidRulesError) as error:
        Rules.from_json(data)
    assert error.value.field == "rules"


@given(
    st.one_of(
        json_values(max_leaves=10, max_list=4, max_text=20),
        st.dictionaries(
            st.sampled_from([*OPTIONS, "preset", "other"]),
            st.one_of(
                json_values(max_leaves=10, max_list=4, max_text=20),
                st.sampled_from([*TABLE, "owner", "always", "mover-empty"]),
            ),
        ),
    )
)
def test_from_json_only_raises_kalah_errors(data: object) -> None:
    tried("rules (preset or JSON options): arbitrary, format -> parse")
    try:
        rules = Rules.from_json(data)
    except KalahError:
        return
    assert Rules.from_json(rules.to_json()) == rules
