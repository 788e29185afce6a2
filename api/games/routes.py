"""``POST /v1/games/analysis``: a whole game judged sowing by sowing (thin over
:mod:`kalah_service.core.game_review`)."""

from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from ..core.game_review import review_game
from ..edge.http_errors import document_problems
from ..edge.responses import analyser
from .schemas import GameAnswerSchema, GameBody, GameRequestSchema

blp = Blueprint(
    "games",
    __name__,
    url_prefix="/v1/games",
    description="Whole-game analysis: every sowing's loss against perfect play and a judgement.",
)

ERRORS = {
    400: "A malformed body (not JSON).",
    413: "The body is too large.",
    422: "Invalid rules or position, a game or position notation that cannot be read, an "
    "illegal move (field game or moves.<index>), or a budget above the server's maximum.",
    503: "The engine is not available, or the review ran past twice its budget and a second "
    "(a busy server; see Retry-After).",
}


@blp.route("/analysis")
class GameAnalysis(MethodView):
    @blp.arguments(GameRequestSchema(), as_kwargs=False)
    @blp.response(200, GameAnswerSchema, description="One entry per sowing and a summary.")
    @document_problems(blp, ERRORS)
    def post(self, data: GameBody) -> dict[str, object]:
        """Analyse a game: a text in the Finnish notation (`game`) or `moves` from `position`
        (default the start). Each sowing gets the position before it, the mover's value before
        and after, the best moves, the seeds lost against perfect play and a judgement: best (0),
        inaccuracy (1-2), mistake (3-5), blunder (6 or more seeds); `exact` says whether the
        loss is proven. Each position is analysed as `/v1/analysis` does (same cache)."""
        limits = data.get("limits") or {}
        review = review_game(
            analyser(),
            data.get("rules"),
            data.get("position", "start"),
            game=data.get("game"),
            moves=data.get("moves"),
            time_ms=limits.get("time_ms"),
            depth=limits.get("depth"),
            nodes=limits.get("nodes"),
        )
        return review.to_json()
