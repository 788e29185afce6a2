"""Honest bounds under a budget: an analysis that cannot prove the value spends a share of its
budget on null-window tests far from the estimate, and the bounds it proves hold."""

from __future__ import annotations

from typing import Any

import pytest

from kalah_core import Rules
from kalah_core.budget import ROUND_MS, _schedule
from kalah_core.game import legal_moves
from kalah_core.position import parse_position
from kalah_core.results import INFINITY
from kalah_core.solver import Engine

ENGINE = Engine(tt_mb=16)


@pytest.mark.parametrize(
    ("houses", "seeds", "value"),
    [(5, 5, 2), (4, 6, 0), (5, 4, 12)],  # published values (empty capture)
)
def test_budgeted_bounds_hold_and_narrow(houses: int, seeds: int, value: int) -> None:
    rules = Rules(houses=houses, seeds=seeds, capture="always")
    start = parse_position("start", rules)
    ENGINE.clear()
    analysis = ENGINE.analyse(start, rules, nodes=100_000)
    assert not analysis.exact
    assert analysis.lower <= value <= analysis.upper
    assert analysis.lower <= analysis.value <= analysis.upper
    for move in analysis.moves:
        assert move.upper <= analysis.upper
    # Futility alone bounds the start by every seed in the game: the tests prove much more.
    assert analysis.upper - analysis.lower < 2 * houses * seeds * 2 * 0.8


def test_a_long_budget_alternates_proof_and_bounds() -> None:
    """Up to ROUND_MS, one round as before; longer, rounds that double and split evenly, the
    last ending where the fallback estimate's share begins."""
    assert _schedule(1000, 0) == [((750, 0), (900, 0))]
    assert _schedule(0, 10_000) == [((0.0, 7500), (0.0, 9000))]
    rounds = _schedule(600_000, 0)
    assert rounds[0] == ((7500, 0), (9000, 0))
    ends = [0.0] + [b[0] for _, b in rounds]
    assert ends[-1] == pytest.approx(540_000)
    for (exact, bounds), start, end in zip(rounds[1:], ends[1:-1], ends[2:], strict=True):
        assert exact[0] - start == pytest.approx(bounds[0] - exact[0])  # split evenly
        assert end - start >= 2 * ROUND_MS  # at least double the first round
    proof = sum(e[0] - s for (e, _), s in zip(rounds, ends, strict=False))
    assert proof > 0.45 * 600_000  # a proof that fits in half the budget is still found


class _Recorder:
    """A searcher stand-in that records every bounds test (beta, answer) and forwards all."""

    def __init__(self, searcher: Any) -> None:
        self._searcher = searcher
        self.tests: list[tuple[int, int | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._searcher, name)

    def probe(self, position: Any, rules: Rules, alpha: int, beta: int) -> int | None:
        v: int | None = self._searcher.probe(position, rules, alpha, beta)
        self.tests.append((beta, v))
        return v


def test_a_round_of_bounds_starts_with_the_cheapest_test_left() -> None:
    """A test that ran out is retried before any test farther from the same bound (which costs
    more), in the next round on the warm table: the rounds keep their steps."""
    rules = Rules(houses=6, seeds=4, capture="always")  # no database: long tests
    start = parse_position("start", rules)
    engine = Engine(tt_mb=16)
    recorder = _Recorder(engine.searcher)
    engine.searcher = recorder  # type: ignore[assignment]
    engine.searcher.begin(start, rules, 0, 1)
    lines = [engine._line(start, rules, move) for move in legal_moves(start, rules)]
    steps: dict[str, int] = {}
    low, high = engine._bisect_root(start, rules, lines, (-INFINITY, INFINITY), steps, 0, 20_000)
    first_round = recorder.tests[:]
    # The low side tests below the middle of the first round's bounds, the high side above.
    ran_out_low = [beta for beta, v in first_round if v is None and beta <= (low + high) // 2]
    ran_out_high = [beta for beta, v in first_round if v is None and beta > (low + high) // 2]
    assert ran_out_low and ran_out_high  # the round ended with tests that ran out
    recorder.tests.clear()
    engine._bisect_root(start, rules, lines, (low, high), steps, 0, 200_000)
    second_round = recorder.tests
    first_low = next(beta for beta, _ in second_round if beta <= (low + high) // 2)
    first_high = next(beta for beta, _ in second_round if beta > (low + high) // 2)
    assert first_low <= min(ran_out_low)
    assert first_high >= max(ran_out_high)
    for beta, v in first_round + second_round:  # and what the tests proved holds (value +10)
        if v is not None:
            assert v <= 10 if v >= beta else v >= 10


def test_a_longer_budget_beyond_reach_ends_no_shallower() -> None:
    """A budget over ROUND_MS where no proof is in sight (Kalah(6,5): 60 seeds) deepens its
    estimate as a shorter one does, instead of spending its rounds on a proof: with the same
    nodes it ends at least as deep, and its bounds hold (a live view watched it deepen)."""
    rules = Rules(houses=6, seeds=5)
    start = parse_position("start", rules)
    depths = {}
    for time_ms in (ROUND_MS, 3 * ROUND_MS):
        engine = Engine(tt_mb=16)
        seen: list[int] = []
        engine.on_deepened = lambda shot, seen=seen: seen.append(shot.depth)
        analysis = engine.analyse(start, rules, time_ms=time_ms, nodes=1_500_000)
        assert not analysis.exact and analysis.lower <= analysis.value <= analysis.upper
        assert seen[-1] == analysis.depth
        depths[time_ms] = analysis.depth
    assert depths[3 * ROUND_MS] >= depths[ROUND_MS]
