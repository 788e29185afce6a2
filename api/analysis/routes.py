"""``/v1/analysis`` (GET and POST) and ``/v1/best-move``: arguments, the core's analyser,
the answer (:mod:`kalah_service.core`, :mod:`kalah_service.edge.responses`)."""

from __future__ import annotations

from typing import Any

from apispec import APISpec, BasePlugin
from flask import Response
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import RAISE

from ..core.live import stream_settings
from ..core.request import AnalysisRequest
from ..edge.http_errors import document_problems
from ..edge.responses import analyser, answer_response, live_response, live_type
from .schemas import (
    AnalysisBody,
    AnalysisFinalSchema,
    AnalysisProgressSchema,
    AnalysisQuery,
    AnalysisQuerySchema,
    AnalysisRequestSchema,
    AnalysisSchema,
    BestMoveAnswerSchema,
    BestMoveQuery,
    BestMoveQuerySchema,
)

blp = Blueprint(
    "analysis",
    __name__,
    url_prefix="/v1",
    description="Values of positions and of every legal move: exact when proven, bounded "
    "otherwise.",
)

ERRORS = {
    400: "A malformed body (not JSON).",
    413: "The body is too large.",
    422: "Invalid rules or position (or its notation), a bad parameter, or a budget above the "
    "server's maximum.",
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


LIVE_DOC = (
    "**Live analysis**: with `Accept: text/event-stream` (server-sent events, `data:` lines) "
    "or `Accept: application/x-ndjson` (one JSON object a line), the answer is a stream of "
    "events: an AnalysisProgress each time the search completes a deepening or narrows a "
    "bound, then an AnalysisFinal, `final` true, whose `answer` is this operation's JSON "
    "answer. Budgets up to KALAH_STREAM_MAX_TIME_MS; heartbeats (SSE comments, blank NDJSON "
    "lines) keep a quiet stream open; closing the connection stops the search. An answer "
    "already known is one event."
)

LIVE_TYPES = ("text/event-stream", "application/x-ndjson")


class ConditionalGetPlugin(BasePlugin):
    """Documents ``If-None-Match`` on the conditional GETs. The routes read the header
    directly: parsing it with a webargs schema would cost a fifth of a cached answer's time.
    Also documents the live analysis of ``/v1/analysis``: its two media types, each a stream
    of ``AnalysisEvent``, beside the JSON answer."""

    PATHS = ("/v1/analysis", "/v1/best-move")

    def init_spec(self, spec: APISpec) -> None:
        self.spec = spec

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if path in self.PATHS and operations and "get" in operations:
            operations["get"].setdefault("parameters", []).insert(0, dict(IF_NONE_MATCH))
        if path == "/v1/analysis" and operations:
            schemas = self.spec.components.schemas
            for name, schema in (
                ("AnalysisProgress", AnalysisProgressSchema),
                ("AnalysisFinal", AnalysisFinalSchema),
            ):
                if name not in schemas:
                    self.spec.components.schema(name, schema=schema)
            event = {
                "oneOf": [
                    {"$ref": "#/components/schemas/AnalysisProgress"},
                    {"$ref": "#/components/schemas/AnalysisFinal"},
                ]
            }
            for method in ("get", "post"):
                operation = operations.get(method)
                if operation is None:
                    continue
                operation["description"] = operation.get("description", "") + "\n\n" + LIVE_DOC
                responses = operation["responses"]
                ok = responses["200"] if "200" in responses else responses[200]
                content = ok.setdefault("content", {})
                for media_type in LIVE_TYPES:
                    content[media_type] = {"schema": dict(event)}


@blp.route("/analysis")
class Analysis(MethodView):
    @blp.arguments(AnalysisQuerySchema(), location="query", as_kwargs=False, unknown=RAISE)
    @blp.response(200, AnalysisSchema, description="The analysis.", headers=CACHE_HEADERS)
    @blp.alt_response(304, description="Not modified (If-None-Match matched the ETag).")
    @document_problems(blp, ERRORS)
    def get(self, args: AnalysisQuery) -> Response:
        """Analyse a position given in the query (cacheable), or watch it deepen.

        `position` is `start` or the compact notation; `rules` a preset, and each rule option
        may be overridden by its own parameter (`&houses=4&capture=always`). Exact answers
        are served with a strong ETag and `Cache-Control: public, max-age=31536000, immutable`.
        """
        live = live_type()
        if live is not None:
            settings = stream_settings(analyser().settings)
            return live_response(AnalysisRequest.from_query(settings, args), live)
        answer = analyser().analyse(AnalysisRequest.from_query(analyser().settings, args))
        return answer_response(answer, conditional=True)

    @blp.arguments(AnalysisRequestSchema(), as_kwargs=False)
    @blp.response(200, AnalysisSchema, description="The analysis.")
    @document_problems(blp, ERRORS)
    def post(self, data: AnalysisBody) -> Response:
        """Analyse a position given in the body: JSON form or compact notation, rules as a
        preset or an object of options, and search limits; or watch it deepen."""
        live = live_type()
        if live is not None:
            settings = stream_settings(analyser().settings)
            return live_response(AnalysisRequest.from_body(settings, data), live)
        answer = analyser().analyse(AnalysisRequest.from_body(analyser().settings, data))
        return answer_response(answer, conditional=False)


@blp.route("/best-move")
class BestMove(MethodView):
    @blp.arguments(BestMoveQuerySchema(), location="query", as_kwargs=False, unknown=RAISE)
    @blp.response(
        200, BestMoveAnswerSchema, description="The best move and the value.", headers=CACHE_HEADERS
    )
    @blp.alt_response(304, description="Not modified (If-None-Match matched the ETag).")
    @document_problems(blp, ERRORS)
    def get(self, args: BestMoveQuery) -> Response:
        """The best move and the value only: the quickest answer (same cache as /v1/analysis)."""
        answer = analyser().analyse(AnalysisRequest.from_query(analyser().settings, args))
        return answer_response(answer.best_move(), conditional=True)
