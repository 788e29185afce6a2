"""The system tests of tests/engine/test_parallel.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import pytest
from test_parallel import CASES, PARALLEL, SERIAL, move_values


@pytest.mark.parametrize("smp", [1, 2, 3], ids=["lazy", "abdada", "both"])
def test_parallel_values_equal_serial(smp: int) -> None:
    PARALLEL.searcher.smp = smp
    for rules, position in CASES:
        expected = move_values(SERIAL, position, rules)
        assert move_values(PARALLEL, position, rules) == expected, (rules, position.compact())


def test_a_watched_search_is_cancelled_and_the_values_stay_right() -> None:
    """The threads' timing decides where a watched node is decided by the other thread
    (about 40 times over these proofs on two free cores, sometimes none on busy ones), so the
    proofs are repeated until one is cancelled (pytest-timeout guards a hang); every repetition's
    values must equal one thread's."""
    PARALLEL.searcher.smp = 2
    cancelled = PARALLEL.searcher.cancelled
    while PARALLEL.searcher.cancelled == cancelled:
        for rules, position in CASES:
            expected = move_values(SERIAL, position, rules)
            assert move_values(PARALLEL, position, rules) == expected, (rules, position.compact())


def test_parallel_value_only_proofs_and_budgets() -> None:
    PARALLEL.searcher.smp = 2
    for rules, position in CASES[::3]:
        SERIAL.clear()
        value = SERIAL.analyse(position, rules, prove="value").value
        PARALLEL.clear()
        answer = PARALLEL.analyse(position, rules, prove="value")
        assert (answer.value, answer.exact) == (value, True)
        PARALLEL.clear()
        budgeted = PARALLEL.analyse(position, rules, nodes=2000)  # proven bounds, not more
        assert budgeted.lower <= value <= budgeted.upper
        assert budgeted.nodes < 2000 + 4 * 1024  # each thread stops within a check interval
