"""``GET /v1/board.svg``: an image of a position, for forum posts, chats and READMEs."""

from __future__ import annotations

from typing import Any

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import RAISE

from kalah_core.errors import IllegalMoveError
from kalah_core.game import Move, legal_moves
from kalah_core.svg import board_svg

from ..core.reply import etag_of
from ..core.request import RULE_PARAMETERS, parse_position_field, parse_query_rules
from ..edge.http_errors import document_problems
from ..edge.responses import not_modified
from .schemas import BoardImageQuerySchema

blp = Blueprint("board", __name__, url_prefix="/v1", description="Images of positions (SVG).")

SVG = "image/svg+xml"
IMAGE = {"type": "string", "format": "binary"}
BINARY = "application/octet-stream"
"""Also offered (the same bytes) to a client that asks for it in ``Accept``: client generators
that know no image type (openapi-python-client) then type the answer as bytes."""
CACHE_CONTROL = "public, max-age=86400"
"""The image is a function of the query; a day, since a new release may draw it better."""

ERRORS = {
    422: "Invalid rules or position (or its notation), a bad parameter, or a move that is not "
    "legal there.",
}

HEADERS = {
    "ETag": {
        "description": "Strong entity tag of the image (send it in If-None-Match).",
        "schema": {"type": "string"},
    },
    "Cache-Control": {"description": CACHE_CONTROL, "schema": {"type": "string"}},
}


@blp.route("/board.svg")
class BoardImage(MethodView):
    @blp.arguments(BoardImageQuerySchema(), location="query", as_kwargs=False, unknown=RAISE)
    # Documented by hand, not with blp.response: the answer has two media types.
    @blp.doc(
        responses={
            "200": {
                "description": "The position drawn as SVG.",
                "headers": HEADERS,
                "content": {
                    SVG: {"schema": {**IMAGE, "description": "An SVG document."}},
                    BINARY: {
                        "schema": {
                            **IMAGE,
                            "description": "The same SVG document, for Accept: " + BINARY,
                        }
                    },
                },
            }
        }
    )
    @blp.alt_response(304, description="Not modified (If-None-Match matched the ETag).")
    @document_problems(blp, ERRORS)
    def get(self, args: dict[str, Any]) -> Response:
        """Draw a position (same parameters as `GET /v1/analysis`), optionally marking a move.

        South's houses are at the bottom, numbered from each player's own left, North's store
        on the left; `flip=true` draws it from North's seat. The image is cacheable (strong
        ETag, `Cache-Control: public, max-age=86400`).
        """
        overrides = {name: args[name] for name in RULE_PARAMETERS if name in args}
        rules = parse_query_rules(args.get("rules"), overrides)
        position = parse_position_field(args["position"], rules)
        move: Move | None = None
        if "move" in args:
            move = args["move"]
            if move not in legal_moves(position, rules):
                legal = ", ".join(str(m) for m in legal_moves(position, rules)) or "none"
                raise IllegalMoveError(
                    f"not a legal move here (legal: {legal})", move=move, position=position
                )
        body = board_svg(position, move=move, flipped=args["flip"], size=args.get("size")).encode()
        tag = etag_of(body)
        headers = {"ETag": tag, "Cache-Control": CACHE_CONTROL}
        if not_modified(tag):
            return Response(status=304, headers=headers)
        mimetype = SVG if request.accept_mimetypes.best_match([SVG, BINARY]) != BINARY else BINARY
        return Response(body, status=200, mimetype=mimetype, headers=headers)
