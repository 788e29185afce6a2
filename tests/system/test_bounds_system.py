"""The system tests of tests/engine/test_bounds.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import pytest
from test_bounds import ENGINE

from kalah_core import Rules, budget
from kalah_core.position import parse_position


@pytest.mark.parametrize("prove", ["all", "value"])
def test_a_proof_spread_over_many_rounds_is_the_proof(
    prove: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds of a few milliseconds: the proof resumes on a warm table after each bounds
    stint, and ends with the value and move values of an unbudgeted search."""
    rules = Rules(houses=5, seeds=4, capture="always")
    start = parse_position("start", rules)
    ENGINE.clear()
    truth = {m.move: m.value for m in ENGINE.analyse(start, rules).moves}
    monkeypatch.setattr(budget, "ROUND_MS", 2.0)
    assert len(budget._schedule(60_000, 0)) > 10
    ENGINE.clear()
    spread = ENGINE.analyse(start, rules, time_ms=60_000, prove=prove)  # type: ignore[arg-type]
    assert spread.exact and spread.value == max(truth.values()) == 12
    assert any(m.exact and m.value == 12 for m in spread.moves)
    for m in spread.moves:
        assert m.lower <= truth[m.move] <= m.upper
        assert m.exact == (prove == "all" or m.lower == m.upper)
        if m.exact:
            assert m.value == truth[m.move]
