"""``POST /v1/play``: apply moves or a game (Finnish notation), return every step and the status."""

from __future__ import annotations

from flask import request
from flask.views import MethodView
from flask_smorest import Blueprint

from ..core.play import play
from ..core.problems import ApiProblem
from ..edge.http_errors import document_problems
from .schemas import PlayAnswerSchema, PlayBody, PlayRequestSchema

blp = Blueprint(
    "play", __name__, url_prefix="/v1", description="Apply moves: the rules as a service."
)


ERRORS = {
    400: "A malformed body (not JSON).",
    413: "The body is too large.",
    422: "Invalid rules or position, a game or position notation that cannot be read, or an "
    "illegal move (field moves.<index> or game).",
}


@blp.route("/play")
class Play(MethodView):
    @blp.arguments(PlayRequestSchema(), as_kwargs=False)
    @blp.response(200, PlayAnswerSchema, description="Every step and the final status.")
    @document_problems(blp, ERRORS)
    def post(self, data: PlayBody) -> dict[str, object]:
        """Play moves (house numbers or 'swap') or a game in the Finnish notation from a
        position (default: the start) and return each intermediate position with the events
        of its sowing and the game status."""
        if not request.get_data(cache=True):  # every field has a default, but a body is required
            raise ApiProblem("malformed-body", "a JSON object body is required", field="body")
        return play(
            data.get("rules"),
            data.get("position", "start"),
            game=data.get("game"),
            moves=data.get("moves"),
        )
