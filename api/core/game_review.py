"""Game analysis over the analysis code path: each position through :meth:`Analyser.analyse`
(same cache, same answers as ``/v1/analysis``), the losses and judgements from
:mod:`kalah_core.review`. Shared by ``POST /v1/games/analysis`` and ``kalah analyse-game``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from kalah_core.answer import analysis_from_json
from kalah_core.game import Move
from kalah_core.position import Position
from kalah_core.results import Analysis
from kalah_core.review import Review, evaluate_backwards, review_history

from ..base.config import Settings
from .analyser import Analyser
from .play import replay
from .problems import ApiProblem
from .request import AnalysisRequest, Limits, parse_position_field, parse_rules

MS_PER_POSITION = 5
"""The least budget a review gives each distinct position: the work around one search (the
cache, an engine, shaping the answer) takes milliseconds, and it is paid for like search time."""

OVERRUN_S = 1.0
"""A review still running after twice its budget and this (a machine too busy to run it)
stops with a 503: the bound a caller cannot escape, whatever the game and budget."""

OVERHEAD_MS = 1.0
"""The first estimate of the work around one search (the cache, an engine, shaping the
answer), before the review has measured its own."""

QUICK_DEPTH = 1
"""How deep the positions a review reaches after its deadline are looked at: one ply, each
move's value by the engine's heuristic (marked inexact), so every sowing is still judged."""


class ReviewClock:
    """A review's budget shared out by its deadline, so that a long review at the least budget
    ends within it (each position's share of the budget alone does not: HISTORY.md).

    Each position's search gets what is left until the deadline, less the work expected
    around the searches still to come (measured as the review goes: what each position took
    beyond the search time it was given), divided by the positions left. So the budgets
    given never add up to more than the review's, none is given past the deadline, and
    the work around the searches is paid for out of the budget rather than on top of it.
    When nothing is left for a search the position gets a one-ply look instead
    (:data:`QUICK_DEPTH`, no time budget to speak of)."""

    def __init__(self, budget_ms: int, positions: int, *, now: float | None = None) -> None:
        self.budget_ms = budget_ms
        self.started = time.monotonic() if now is None else now
        self.deadline = self.started + budget_ms / 1000
        self.left = positions
        self.overhead_ms = OVERHEAD_MS
        self.given: list[tuple[float, int]] = []
        """(when, time_ms) of every search budget handed out: what the tests add up."""

    def share(self, now: float | None = None) -> int | None:
        """The next position's search budget in ms, or None: no time left for a search."""
        now = time.monotonic() if now is None else now
        left = max(1, self.left)
        searchable_ms = (self.deadline - now) * 1000 - self.overhead_ms * left
        if searchable_ms < left:  # less than a millisecond each
            return None
        share = int(searchable_ms / left)
        self.given.append((now, share))
        return share

    def done(self, given_ms: int | None, took_ms: float) -> None:
        """One position analysed: ``took_ms`` in all for a search of ``given_ms``."""
        self.left -= 1
        beyond = max(0.0, took_ms - (given_ms or 0))
        # a moving average, each sample capped (an engine's first search makes its table)
        self.overhead_ms = 0.8 * self.overhead_ms + 0.2 * min(beyond, 10 * OVERHEAD_MS + 10)


def review_budget(settings: Settings, time_ms: int | None, sowings: int, positions: int) -> int:
    """The whole game's budget: ``time_ms``, by default KALAH_DEFAULT_TIME_MS per sowing
    capped at KALAH_MAX_TIME_MS; at least :data:`MS_PER_POSITION` per distinct position
    (less is a 422 naming ``limits.time_ms``, or ``game`` if the maximum cannot cover it)."""
    least = MS_PER_POSITION * positions
    if least > settings.max_time_ms:
        raise ApiProblem(
            "limit-exceeded",
            f"the game has {positions} distinct positions: reviewing it needs at least "
            f"{least} ms ({MS_PER_POSITION} ms a position), above the server's maximum of "
            f"{settings.max_time_ms}",
            field="game",
            max=settings.max_time_ms,
        )
    if time_ms is None:
        return max(least, min(settings.max_time_ms, settings.default_time_ms * sowings))
    if time_ms < least:
        raise ApiProblem(
            "invalid-request",
            f"time_ms {time_ms} is too small for the game's {positions} distinct positions: "
            f"at least {least} ({MS_PER_POSITION} ms a position)",
            field="limits.time_ms",
        )
    return time_ms


def review_game(
    analyser: Analyser,
    rules_in: object,
    position_in: object = "start",
    *,
    game: str | None = None,
    moves: Sequence[Move] | None = None,
    time_ms: int | None = None,
    depth: int | None = None,
    nodes: int | None = None,
    on_clock: Callable[[ReviewClock], None] | None = None,
) -> Review:
    """The review of a game; the analyser's meter is told the whole game's search budget
    before the first search (the API reserves its cost); ``on_clock`` is called with the
    :class:`ReviewClock` that shares it out (tests watch the budgets it hands out)."""
    rules = parse_rules(rules_in)
    start = parse_position_field(position_in, rules)
    played = replay(rules, start, game=game, moves=moves)
    if not played.history:
        raise ApiProblem("invalid-request", "the game has no sowing", field="game")
    settings = analyser.settings
    # The checks of one analysis's limits; time_ms is the whole game's budget here, by
    # default KALAH_DEFAULT_TIME_MS per sowing, capped at KALAH_MAX_TIME_MS.
    Limits.checked(settings, {"time_ms": time_ms, "depth": depth, "nodes": nodes}, prefix="limits.")
    positions = len({r.before.compact() for r in played.history})
    budget = review_budget(settings, time_ms, len(played.history), positions)
    if analyser.meter is not None:
        analyser.meter.prepay(budget)
    clock = ReviewClock(budget, positions)
    if on_clock is not None:
        on_clock(clock)
    stop_at = clock.started + 2 * budget / 1000 + OVERRUN_S

    def analyse(position: Position, _share_ms: int) -> Analysis:
        started = time.monotonic()
        if started >= stop_at:
            raise ApiProblem(
                "busy",
                f"the review did not finish within twice its budget of {budget} ms and "
                f"{OVERRUN_S:.0f} s (the server is busy); see Retry-After",
                headers={"Retry-After": str(math.ceil(budget / 1000) + 1)},
            )
        share_ms = clock.share(started)
        if share_ms is None:  # past the deadline: a one-ply look, no search to speak of
            quick = min(depth, QUICK_DEPTH) if depth else QUICK_DEPTH
            limits = Limits(1, quick, nodes)
        else:
            limits = Limits(share_ms, depth, nodes)
        answer = analyser.analyse(AnalysisRequest(position, rules, limits))
        clock.done(share_ms, (time.monotonic() - started) * 1000)
        return analysis_from_json(answer.data())

    evaluations = evaluate_backwards([r.before for r in played.history], budget, analyse)
    return review_history(
        rules, start, played.history, lambda position: evaluations[position.compact()]
    )
