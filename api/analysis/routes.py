# mypy: disable-error-code="untyped-decorator"
"""``/v1/analysis`` (GET and POST) and ``/v1/best-move``: thin routes over :mod:`.analyser`."""

from __future__ import annotations

from typing import Any

from apispec import BasePlugin
from flask import Response, current_app, json, request
from flask.views import MethodView
from flask_smorest import Blueprint  # type: ignore[import-untyped]
from marshmallow import RAISE

from ..errors import document_problems
from ..ratelimit import charge_search
from .analyser import Analyser
from .answer import Answer, best_move_of, etag_of
from .request import AnalysisRequest
from .schemas import (
    AnalysisQuerySchema,
    AnalysisRequestSchema,
    AnalysisSchema,
    BestMoveAnswerSchema,
    BestMoveQuerySchema,
)

blp = Blueprint(
    "analysis",
    __name__,
    url_prefix="/v1",
    description="Values of positions and of every legal move: exact when proven, bounded "
    "otherwise.",
)

IMMUTABLE = "public, max-age=31536000, immutable"
ERRORS = {
    400: "Unparsable input: a malformed body or position notation.",
    413: "The body is too large.",
    422: "Invalid rules or position, a bad parameter, or a budget above the server's maximum.",
}


CACHE_HEADERS = {
    "ETag": {
        "description": "Strong entity tag of this exact representation (send it in If-None-Match).",
        "schema": {"type": "string"},
    },
    "Cache-Control": {
        "description": "public, max-age=31536000, immutable for exact answers; no-cache otherwise.",
        "schema": {"type": "string"},
    },
}


IF_NONE_MATCH = {
    "in": "header",
    "name": "If-None-Match",
    "required": False,
    "description": "ETags of representations the client holds: 304 if one matches.",
    "schema": {"type": "string"},
}


class ConditionalGetPlugin(BasePlugin):
    """Documents ``If-None-Match`` on the conditional GETs. The routes read the header
    directly: parsing it with a webargs schema would cost a fifth of a cached answer's time."""

    PATHS = ("/v1/analysis", "/v1/best-move")

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if path in self.PATHS and operations and "get" in operations:
            operations["get"].setdefault("parameters", []).insert(0, dict(IF_NONE_MATCH))


def analyser() -> Analyser:
    result: Analyser = current_app.extensions["kalah"]
    return result


def _answer(body: bytes, exact: bool, *, conditional: bool) -> Response:
    """The answer with its strong ETag; a GET also gets Cache-Control and may be a 304."""
    tag = etag_of(body)
    headers = {"ETag": tag}
    if conditional:
        headers["Cache-Control"] = IMMUTABLE if exact else "no-cache"
        if request.if_none_match and request.if_none_match.contains_weak(tag.strip('"')):
            return Response(status=304, headers=headers)
    return Response(body, status=200, mimetype="application/json", headers=headers)


def _from_query(args: dict[str, Any]) -> Answer:
    return _charged(analyser().analyse(AnalysisRequest.from_query(analyser().settings, args)))


def _charged(answer: Answer) -> Answer:
    """Charge the caller for the search this answer ran (see api.ratelimit)."""
    charge_search(answer.search_ms)
    return answer


@blp.route("/analysis")
class Analysis(MethodView):
    @blp.arguments(AnalysisQuerySchema(), location="query", as_kwargs=False, unknown=RAISE)
    @blp.response(200, AnalysisSchema, description="The analysis.", headers=CACHE_HEADERS)
    @blp.alt_response(304, description="Not modified (If-None-Match matched the ETag).")
    @document_problems(blp, ERRORS)
    def get(self, args: dict[str, Any]) -> Response:
        """Analyse a position given in the query (cacheable).

        `position` is `start` or the compact notation; `rules` a preset, and each rule option
        may be overridden by its own parameter (`&houses=4&capture=always`). Exact answers
        are served with a strong ETag and `Cache-Control: public, max-age=31536000, immutable`.
        """
        answer = _from_query(args)
        return _answer(answer.body, answer.exact, conditional=True)

    @blp.arguments(AnalysisRequestSchema(), as_kwargs=False)
    @blp.response(200, AnalysisSchema, description="The analysis.")
    @document_problems(blp, ERRORS)
    def post(self, data: dict[str, Any]) -> Response:
        """Analyse a position given in the body: JSON form or compact notation, rules as a
        preset or an object of options, and search limits."""
        request = AnalysisRequest.from_body(analyser().settings, data)
        answer = _charged(analyser().analyse(request))
        return _answer(answer.body, answer.exact, conditional=False)


@blp.route("/best-move")
class BestMove(MethodView):
    @blp.arguments(BestMoveQuerySchema(), location="query", as_kwargs=False, unknown=RAISE)
    @blp.response(
        200, BestMoveAnswerSchema, description="The best move and the value.", headers=CACHE_HEADERS
    )
    @blp.alt_response(304, description="Not modified (If-None-Match matched the ETag).")
    @document_problems(blp, ERRORS)
    def get(self, args: dict[str, Any]) -> Response:
        """The best move and the value only: the quickest answer (same cache as /v1/analysis)."""
        full = _from_query(args).json()
        best = best_move_of(full)
        return _answer(
            json.dumps(best, separators=(",", ":")).encode(), full["exact"], conditional=True
        )
