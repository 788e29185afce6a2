"""Game analysis over the analysis code path: each position through :meth:`Analyser.analyse`
(same cache, same answers as ``/v1/analysis``), the losses and judgements from
:mod:`kalah_core.review`. Shared by ``POST /v1/games/analysis`` and ``kalah analyse-game``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kalah_core.answer import analysis_from_json
from kalah_core.game import Game, Move
from kalah_core.position import Position
from kalah_core.review import Review, evaluate_backwards, review_history
from kalah_core.rules import Rules
from kalah_core.solver import Analysis

from ..analysis.analyser import Analyser
from ..analysis.request import AnalysisRequest, Limits, parse_position_field, parse_rules
from ..errors import ApiProblem, renamed_field


def replay(
    rules: Rules, start: Position, *, game: str | None, moves: Sequence[Move] | None
) -> Game:
    """The game played from ``start``; errors name ``game`` or ``moves.<i>``."""
    played = Game(rules, start)
    if game is not None:
        with renamed_field(lambda _field: "game"):
            played.push_fi(game)
    for index, move in enumerate(moves or ()):
        with renamed_field(lambda _field, i=index: f"moves.{i}"):  # type: ignore[misc]
            played.push(move)
    return played


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
    on_budget: Callable[[int], None] | None = None,
) -> Review:
    """The review of a game; ``on_budget`` is called with the whole game's search budget
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
    sowings = len(played.history)
    budget = time_ms or min(settings.max_time_ms, settings.default_time_ms * sowings)
    if on_budget is not None:
        on_budget(budget)

    def analyse(position: Position, share_ms: int) -> Analysis:
        request = AnalysisRequest(position, rules, Limits(share_ms, depth, nodes))
        answer = analyser.analyse(request)
        return analysis_from_json(answer.json())

    evaluations = evaluate_backwards([r.before for r in played.history], budget, analyse)
    return review_history(
        rules, start, played.history, lambda position: evaluations[position.compact()]
    )
