# mypy: disable-error-code="untyped-decorator"
"""``POST /v1/play``: apply moves or a game (Finnish notation), return every step and the status."""

from __future__ import annotations

from typing import Any

from flask import request
from flask.views import MethodView
from flask_smorest import Blueprint  # type: ignore[import-untyped]

from kalah_core.errors import IllegalMoveError
from kalah_core.finnish import write_fi
from kalah_core.game import Game, legal_moves, outcome

from ..analysis.request import parse_position_field, parse_rules
from ..errors import ApiProblem, document_problems, renamed_field
from .schemas import PlayAnswerSchema, PlayRequestSchema

blp = Blueprint(
    "play", __name__, url_prefix="/v1", description="Apply moves: the rules as a service."
)


ERRORS = {
    400: "Unparsable input.",
    413: "The body is too large.",
    422: "Invalid rules or position, or an illegal move (field moves.<index> or game).",
}


@blp.route("/play")
class Play(MethodView):
    @blp.arguments(PlayRequestSchema(), as_kwargs=False)
    @blp.response(200, PlayAnswerSchema, description="Every step and the final status.")
    @document_problems(blp, ERRORS)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Play moves (house numbers or 'swap') or a game in the Finnish notation from a
        position (default: the start) and return each intermediate position with the events
        of its sowing and the game status."""
        if not request.get_data(cache=True):  # every field has a default, but a body is required
            raise ApiProblem("malformed-body", "a JSON object body is required", field="body")
        rules = parse_rules(data.get("rules"))
        start = parse_position_field(data.get("position", "start"), rules)
        game = Game(rules, start)
        if "game" in data:
            with renamed_field(lambda _field: "game"):
                game.push_fi(data["game"])
        for index, move in enumerate(data.get("moves", [])):
            try:
                game.push(move)
            except IllegalMoveError as error:
                error.field = f"moves.{index}"
                raise
        final = game.position
        result = outcome(final, rules)
        winner = None
        if result is not None:
            winner = result.winner.value if result.winner is not None else "draw"
        return {
            "rules": rules.to_json(),
            "start": start.compact(),
            "steps": [
                {
                    "move": r.move,
                    "mover": r.mover.value,
                    "extra_turn": r.extra_turn,
                    "captured": r.captured,
                    "over": r.over,
                    "position": r.after.compact(),
                    "board": r.after.to_json(),
                }
                for r in game.history
            ],
            "position": final.compact(),
            "board": final.to_json(),
            "status": {
                "over": result is not None,
                "to_move": final.to_move.value,
                "legal_moves": legal_moves(final, rules),
                "score": None
                if result is None
                else {"south": result.score[0], "north": result.score[1]},
                "winner": winner,
            },
            "game": write_fi(game.history),
        }
