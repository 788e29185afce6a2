"""Game analysis over the analysis code path: each position through :meth:`Analyser.analyse`
(same cache, same answers as ``/v1/analysis``), the losses and judgements from
:mod:`kalah_core.review`. Shared by ``POST /v1/games/analysis`` and ``kalah analyse-game``."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from kalah_core.answer import analysis_from_json
from kalah_core.game import Move
from kalah_core.position import Position
from kalah_core.results import Analysis
from kalah_core.review import Review, evaluate_backwards, review_history

from ..config import Settings
from .analyser import Analyser
from .play import replay
from .problems import ApiProblem
from .request import AnalysisRequest, Limits, parse_position_field, parse_rules

MS_PER_POSITION = 5
"""The least budget a review gives each distinct position: the work around one search (the
cache, an engine, shaping the answer) takes 2-4 ms, and it is paid for like search time."""

OVERRUN_S = 1.0
"""A review still running after twice its budget and this (a machine too busy to run it)
stops with a 503: the bound a caller cannot escape, whatever the game and budget."""


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
) -> Review:
    """The review of a game; the analyser's meter is told the whole game's search budget
    before the first search (the API reserves its cost)."""
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
    stop_at = time.monotonic() + 2 * budget / 1000 + OVERRUN_S

    def analyse(position: Position, share_ms: int) -> Analysis:
        left_s = stop_at - time.monotonic()
        if left_s <= 0:
            raise ApiProblem(
                "busy",
                f"the review did not finish within twice its budget of {budget} ms and "
                f"{OVERRUN_S:.0f} s (the server is busy); see Retry-After",
                headers={"Retry-After": str(math.ceil(budget / 1000) + 1)},
            )
        share_ms = max(1, min(share_ms, int(left_s * 1000)))
        request = AnalysisRequest(position, rules, Limits(share_ms, depth, nodes))
        return analysis_from_json(analyser.analyse(request).data())

    evaluations = evaluate_backwards([r.before for r in played.history], budget, analyse)
    return review_history(
        rules, start, played.history, lambda position: evaluations[position.compact()]
    )
