"""The system tests of tests/engine/test_book.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import pytest
import test_book
from test_book import DEPTH, SMALL_RULES, positions_within

from kalah_core import Rules
from kalah_core.book import Book
from kalah_core.solver import Engine

small_book = test_book.small_book  # the fixture these tests share with test_book.py


@pytest.mark.parametrize("rules", SMALL_RULES, ids=lambda r: r.key)
def test_every_book_position_has_the_engines_move_values(small_book: Book, rules: Rules) -> None:
    engine = Engine(tt_mb=8)
    held = 0
    for position in positions_within(rules, DEPTH):
        values = small_book.move_values(position, rules)
        if values is None:
            continue
        held += 1
        analysis = engine.analyse(position, rules)
        assert analysis.exact
        assert values == {m.move: m.value for m in analysis.moves}, position.compact()
    # Everything within DEPTH sowings is held (a swap is no sowing: a little more under pie).
    assert held >= len(positions_within(Rules(**{**rules.to_json(), "pie": False}), DEPTH))
