"""The system tests of tests/engine/test_known_values.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import pytest
from test_known_values import ENGINE

from kalah_core import Position, Rules


@pytest.mark.parametrize("capture", ["nonempty", "always"])
def test_kalah_6_3_is_plus_two(capture: str) -> None:
    rules = Rules(houses=6, seeds=3, capture=capture)
    analysis = ENGINE.analyse(Position.start(rules), rules, prove="value")
    assert analysis.exact
    assert analysis.value == 2
