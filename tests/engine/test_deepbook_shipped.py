"""The shipped deep book: it loads, holds the whole first sowings of the 6-seed presets, and
the engine answers their start from it."""

from __future__ import annotations

import pytest

from kalah_core import deepbook
from kalah_core.deepbook_build import levels
from kalah_core.position import Position
from kalah_core.rules import Rules
from kalah_core.solver import Engine

SHIPPED_RULES = {
    "piet-hein": Rules.preset("piet-hein"),
    "kalah-ru": Rules.preset("kalah-ru"),
    "kgp-6x6": Rules.preset("kgp", houses=6, seeds=6),
}


@pytest.mark.parametrize("name", sorted(SHIPPED_RULES))
def test_the_shipped_deep_book_loads_and_holds_the_start(name: str) -> None:
    rules = SHIPPED_RULES[name]
    shipped = deepbook.shipped()
    section = shipped.sections[rules.key]
    assert section.rules == rules and section.sowings >= 1
    wanted = {k for level in levels(rules, section.sowings) for k in level}
    assert wanted <= set(section.records)
    start = Position.start(rules)
    record = shipped.record(start, rules)
    assert record is not None and record.depth is not None
    assert record.lower <= record.estimate <= record.upper
    for key, r in section.records.items():
        assert r.lower <= r.upper and all(m.lower <= m.upper for m in r.moves), key.hex()
    info = section.info()
    assert (info["start_lower"], info["start_upper"]) == (record.lower, record.upper)
    answer = Engine(tt_mb=4, deep_book=shipped).analyse(start, rules, time_ms=1000)
    assert answer.extra["book"]["kind"] == "deep"
    assert (answer.lower, answer.upper, answer.depth) == (record.lower, record.upper, record.depth)


def test_the_shipped_kgp_section_holds_the_positions_after_its_games() -> None:
    """``kalah book deep --after`` records in the shipped KGP 6x6 section: the position each
    noted game leads to has a record of every legal move, deeper than the agent's 1 s."""
    from kalah_core.game import Game, legal_moves

    rules = SHIPPED_RULES["kgp-6x6"]
    shipped = deepbook.shipped()
    notes = shipped.sections[rules.key].build["after"]
    games = [g for note in notes for g in note["games"]]
    assert "13-2, 4-" in games  # North's second move after MinMax-10's first replies
    for text in games:
        position = Game.parse_fi(text, rules).position
        record = shipped.record(position, rules)
        assert record is not None and record.depth is not None and record.depth >= 20
        assert {m.house for m in record.moves} == set(legal_moves(position, rules))


PUBLISHED_PIET_HEIN = {"1-2": 2, "1-3": 2, "1-4": 0, "1-5": 0, "1-6": 0, "2": 2, "3": 0, "4": 0}
PUBLISHED_PIET_HEIN |= {"5": 0, "6": -2}
"""Rawlings' values of Kalah(6,6) empty capture's first turns for South (KNOWN_VALUES.md; "1-2":
house 1, which ends in the store, then house 2): a check of the shipped bounds, never their
input."""


def test_the_piet_hein_bounds_hold_every_published_first_turn_value() -> None:
    rules = SHIPPED_RULES["piet-hein"]
    engine = Engine(tt_mb=4, deep_book=deepbook.shipped())
    start = engine.analyse(Position.start(rules), rules, time_ms=100)
    first = {m.move: m for m in start.moves}
    again = engine.analyse(first[1].position, rules, time_ms=100)  # South moves again
    assert start.extra["book"]["kind"] == again.extra["book"]["kind"] == "deep"
    second = {m.move: m for m in again.moves}
    assert start.lower is not None and start.upper is not None
    assert start.lower <= 2 <= start.upper  # Kalah(6,6) empty capture: +2
    for turn, value in PUBLISHED_PIET_HEIN.items():
        move = second[int(turn[2])] if turn.startswith("1-") else first[int(turn)]
        assert move.lower is not None and move.upper is not None
        assert move.lower <= value <= move.upper, (turn, move.lower, move.upper)
