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
