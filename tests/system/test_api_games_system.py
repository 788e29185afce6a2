"""The system tests of tests/service/test_api_games.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from figures import measured
from flask import Flask
from test_api_games import SLOW_S, long_game

from kalah_service.core import game_review as review_module
from kalah_service.core.game_review import OVERRUN_S


def test_a_review_has_a_total_bound_the_caller_cannot_escape(app: Flask) -> None:
    """Finding 11: a review with time_ms 1 over 430 sowings ran 2.05 s (1 ms of budget, and
    each position's work around its search on top). A budget below 5 ms a distinct position is
    now a 422 at once; that least budget is accepted, and the review ends within its bound: a
    whole review, or on a machine too busy for it a 503 (the next test makes the machine too
    busy and checks where it stops). The times are reported, not judged."""
    client = app.test_client()
    body = long_game(3)
    positions = len(body["moves"])  # type: ignore[arg-type]
    started = time.perf_counter()
    refused = client.post("/v1/games/analysis", json={**body, "limits": {"time_ms": 1}})
    refused_s = time.perf_counter() - started
    assert refused.status_code == 422 and refused.json["field"] == "limits.time_ms"
    assert str(5 * positions) in refused.json["detail"]
    least = 5 * positions
    started = time.perf_counter()
    review = client.post("/v1/games/analysis", json={**body, "limits": {"time_ms": least}})
    review_s = time.perf_counter() - started
    measured(
        f"review of {positions} sowings: time_ms 1 -> {refused.status_code} in "
        f"{refused_s * 1000:.0f} ms; time_ms {least} (the least) -> {review.status_code} in "
        f"{review_s:.2f} s"
    )
    if review.status_code == 503:
        assert review.json["type"].endswith("/busy") and "Retry-After" in review.headers
    else:
        assert review.status_code == 200 and len(review.json["moves"]) == positions


def test_a_review_on_a_machine_too_busy_for_its_budget_stops_with_a_503(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each position's work made slow (a machine too busy): the review stops at twice its
    budget and a second with a 503 and Retry-After, instead of running on. The review reads a
    clock that only the slow searches advance, so where it stops depends on no machine's speed."""
    analyser = app.extensions["kalah"]
    search = analyser.search
    searches = 0
    now = [0.0]
    monkeypatch.setattr(review_module, "time", SimpleNamespace(monotonic=lambda: now[0]))

    def slow(*args: Any, **kwargs: Any) -> Any:
        nonlocal searches
        searches += 1
        now[0] += SLOW_S
        return search(*args, **kwargs)

    analyser.search = slow
    body = long_game(3)
    budget = 5 * len(body["moves"])  # type: ignore[arg-type]  # the least: 1.1 s
    # 2 x 1.1 + 1 s allowed in all; the searches alone would take 0.1 s x 227 positions.
    answer = app.test_client().post(
        "/v1/games/analysis", json={**body, "limits": {"time_ms": budget}}
    )
    took = now[0]
    measured(
        f"review on a busy machine, {budget} ms budget: {answer.status_code} after {took:.2f} s "
        f"of the review's clock ({searches} searches)"
    )
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "3"
    assert answer.json["type"].endswith("/busy")
    bound_s = 2 * budget / 1000 + OVERRUN_S
    assert took >= bound_s, "not before its bound"
    # Not after it either: a search starts only before the bound, and each advances the clock
    # by SLOW_S, so the review stopped at the first search after it.
    assert searches <= bound_s / SLOW_S + 1 < len(body["moves"])  # type: ignore[arg-type]
