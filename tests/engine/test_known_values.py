"""Published game values reproduced from the start (the cells that solve in well under a second).

Irving, Donkers & Uiterwijk (2000) under their rules (capture=always, end=either-side-empty),
and Kalah(6,3) = +2 under both capture rules (seed 002, Rawlings 2015). The whole table,
slow cells included, is printed by ``benchmarks/known_values.py``.
"""

from __future__ import annotations

import pytest

from kalah_core import Position, Rules
from kalah_core.solver import Engine

PAPER = {
    (1, 1): 0, (1, 2): -2, (1, 3): 6, (1, 4): -2, (1, 5): 2, (1, 6): 0,
    (2, 1): 2, (2, 2): -2, (2, 3): -2, (2, 4): -12, (2, 5): 6, (2, 6): 8,
    (3, 1): 0, (3, 2): 4, (3, 3): 2, (3, 4): 2, (3, 5): 6, (3, 6): -10,
    (4, 1): 2, (4, 2): 6, (4, 3): 8, (4, 4): 2,
    (5, 1): 0, (5, 2): 0,
    (6, 1): 2, (6, 2): 10,
}  # fmt: skip

ENGINE = Engine(tt_mb=64)


@pytest.mark.parametrize(("houses", "seeds"), sorted(PAPER))
def test_irving_2000_values(houses: int, seeds: int) -> None:
    rules = Rules(houses=houses, seeds=seeds, capture="always")
    analysis = ENGINE.analyse(Position.start(rules), rules, prove="value")
    assert analysis.exact
    assert analysis.value == PAPER[houses, seeds]


@pytest.mark.slow
@pytest.mark.parametrize(("capture", "value"), [("always", 10), ("nonempty", 8)])
def test_kalah_6_4(capture: str, value: int) -> None:
    rules = Rules(houses=6, seeds=4, capture=capture)
    analysis = Engine(tt_mb=1024).analyse(Position.start(rules), rules, prove="value")
    assert analysis.exact
    assert analysis.value == value
