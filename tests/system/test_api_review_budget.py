"""Issue 33, finding 9: at the least budget (5 ms a distinct position), long reviews took well
over their budget: each position's search got its share, and the work
around the searches (the cache, an engine, the answer) came on top; past the deadline every
position still got a 1 ms search. The budget is now shared out by the deadline
(:class:`kalah_service.core.game_review.ReviewClock`).

Watched here without timing the review: the review runs on a clock that only its searches
advance (each by its whole budget and the work around it: 2 ms, which fits the least budget
of 5 ms a position, or 8 ms, which does not), so what it hands out depends on no machine's
speed. Every search budget handed to the engine, when it was handed out, and the
review's deadline: they must add up to at most the budget, none may reach past the deadline,
and what is reviewed after it gets only a one-ply look.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from figures import measured
from flask import Flask
from test_api_games import long_game

from kalah_service.core import game_review as service
from kalah_service.core.game_review import QUICK_DEPTH, ReviewClock
from kalah_service.core.request import AnalysisRequest


@pytest.mark.parametrize("work_ms", [2, 8])
@pytest.mark.parametrize("seed", [3, 5, 8])
def test_a_review_at_the_least_budget_hands_out_no_time_past_its_deadline(
    app: Flask, monkeypatch: pytest.MonkeyPatch, seed: int, work_ms: int
) -> None:
    clocks: list[ReviewClock] = []

    class Watched(ReviewClock):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            clocks.append(self)

    monkeypatch.setattr(service, "ReviewClock", Watched)
    analyser = app.extensions["kalah"]
    analyse = analyser.analyse
    searches: list[tuple[float, AnalysisRequest]] = []
    now = [0.0]
    monkeypatch.setattr(service, "time", SimpleNamespace(monotonic=lambda: now[0]))

    def watched(request: AnalysisRequest) -> Any:
        searches.append((now[0], request))
        answer = analyse(request)
        now[0] += ((request.limits.time_ms or 0) + work_ms) / 1000
        return answer

    monkeypatch.setattr(analyser, "analyse", watched)
    body = long_game(seed)
    budget = 5 * len(body["moves"])  # type: ignore[arg-type]  # the least, all distinct
    answer = app.test_client().post(
        "/v1/games/analysis", json={**body, "limits": {"time_ms": budget}}
    )
    assert answer.status_code == 200, answer.json
    assert len(answer.json["moves"]) == len(body["moves"])  # type: ignore[arg-type]

    (clock,) = clocks
    assert clock.budget_ms == budget and len(searches) == len(body["moves"])  # type: ignore[arg-type]
    searched = [(when, r) for when, r in searches if r.limits.depth != QUICK_DEPTH]
    looked = [(when, r) for when, r in searches if r.limits.depth == QUICK_DEPTH]
    # The budgets handed to the engine add up to at most the review's ...
    assert sum(r.limits.time_ms for _, r in searched) <= budget
    assert sum(share for _, share in clock.given) <= budget
    # ... none reaches past the deadline ...
    for when, request in searched:
        assert when + request.limits.time_ms / 1000 <= clock.deadline, (when, request.limits)
    # ... and past it, a position gets only a one-ply look (no time budget to speak of).
    for when, request in searches:
        if when >= clock.deadline:
            assert request.limits.depth == QUICK_DEPTH and request.limits.time_ms == 1
    # Work that alone outlasts the budget takes the review past its deadline; 2 ms does not.
    assert bool(looked) == (work_ms * len(searches) > budget), len(looked)
    measured(
        f"review of {len(searches)} sowings, budget {budget} ms: {len(searched)} searches "
        f"given {sum(r.limits.time_ms for _, r in searched)} ms in all, {len(looked)} one-ply "
        f"looks; overhead estimate at the end {clock.overhead_ms:.2f} ms a position"
    )


def test_the_clock_shares_what_is_left_by_the_deadline() -> None:
    """The arithmetic, on a clock driven by hand: shares shrink with the time left and the
    work measured around each search, and stop when under a millisecond each is left."""
    clock = ReviewClock(1000, 10, now=0.0)
    assert clock.share(0.0) == 99  # (1000 - 1 ms of work each x 10) / 10
    clock.done(99, 120.0)  # 21 ms of work around that search: the estimate rises
    assert clock.overhead_ms == pytest.approx(0.8 * 1.0 + 0.2 * 20.0)
    assert clock.share(0.5) == int((500 - clock.overhead_ms * 9) / 9)
    assert clock.share(0.999) is None  # 1 ms left for 9 positions
    assert clock.share(2.0) is None  # past the deadline
    assert sum(share for _, share in clock.given) <= 1000
