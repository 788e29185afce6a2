"""The Kalah analysis REST API: a Flask app built by :func:`create_app`.

One folder per resource (``routes.py`` + ``schemas.py``), registered from :data:`RESOURCES`;
routes are thin and call :mod:`kalah_core`; every error is problem+json
(:mod:`kalah_service.edge.http_errors`); settings come from the environment
(:mod:`kalah_service.base.config`). OpenAPI 3 is served at ``/openapi.json`` with a docs UI at
``/docs``, and the analysis board at ``/`` (:mod:`kalah_service.board`); ``python -m
kalah_service.export_openapi`` writes the spec to ``api/openapi.json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from apispec import BasePlugin
from flask import Flask, Response, g, request
from flask_smorest import Api
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Rule

from kalah_core import __version__
from kalah_core.errors import KalahError

from .analysis import routes as analysis_routes
from .base import metrics
from .base.config import ENV_NAMES, MAX_BODY_BYTES, Settings, load_settings
from .batch import routes as batch_routes
from .board import page as board_page
from .board import routes as board_routes
from .core.analyser import Analyser
from .core.problems import ApiProblem
from .edge.bounds import init_body_guard
from .edge.callers import Authenticator
from .edge.charging import RequestMeter, charge_body, init_rate_limits
from .edge.forwarding import ForwardedFor
from .edge.http_errors import PROBLEM_JSON, problem_for
from .edge.security import init_security
from .edge.spec_limits import ServerLimitsPlugin
from .edge.spec_rates import RateLimitDocsPlugin
from .games import routes as games_routes
from .health import routes as health_routes
from .ops import backends
from .play import routes as play_routes
from .problems import routes as problems_routes
from .ratelimit.costs import COSTS_DOC
from .rules import routes as rules_routes
from .schemas.answers import ProblemSchema
from .schemas.components import COMPONENTS, component_ref

RESOURCES = (
    analysis_routes,
    batch_routes,
    games_routes,
    play_routes,
    rules_routes,
    board_routes,
    health_routes,
    problems_routes,
)
"""Every resource's routes module; each has a flask-smorest ``blp``."""

API_DESCRIPTION = (
    """\
Analysis of Kalah positions under every rule set of the project's rule texts: exact values
with every optimal move when the solver proves them, honest bounds otherwise.

Values are always from the point of view of the side to move (`perspective: side_to_move`):
the final store difference under perfect play, seeds already stored included.
Positions are given as `start`, in the compact notation (`444444-0-444444-0-s`) or in JSON
form. Errors are RFC 9457 `application/problem+json` with a `field` naming the offending input.

"""
    + COSTS_DOC
)


OPERATION_IDS = {
    ("get", "/v1/analysis"): "analyseQuery",
    ("post", "/v1/analysis"): "analyse",
    ("get", "/v1/best-move"): "bestMove",
    ("post", "/v1/batch"): "analyseBatch",
    ("get", "/v1/jobs/{job_id}"): "getJob",
    ("delete", "/v1/jobs/{job_id}"): "cancelJob",
    ("post", "/v1/games/analysis"): "analyseGame",
    ("post", "/v1/play"): "play",
    ("get", "/v1/rules"): "getRules",
    ("get", "/livez"): "livez",
    ("get", "/readyz"): "readyz",
    ("get", "/metrics"): "metrics",
    ("get", "/problems/{slug}"): "getProblemType",
}
"""Each operation's ``operationId``: the name of its function in a generated client."""


class OperationIds(BasePlugin):
    """Gives every operation its ``operationId``: from :data:`OPERATION_IDS`, else the method
    and the view's name (``getBoardImage`` for the view ``BoardImage``)."""

    def operation_helper(
        self,
        path: str | None = None,
        operations: dict[str, Any] | None = None,
        rule: Rule | None = None,
        **kwargs: Any,
    ) -> None:
        for method, operation in (operations or {}).items():
            view = rule.endpoint.rpartition(".")[2] if rule is not None else "operation"
            fallback = method + view[:1].upper() + view[1:]
            operation.setdefault("operationId", OPERATION_IDS.get((method, path or ""), fallback))


class KalahApi(Api):
    """flask-smorest's Api with every HTTP error rendered as problem+json."""

    ERROR_SCHEMA = ProblemSchema

    def handle_http_exception(self, error: HTTPException) -> Response:
        return problem_for(error)

    def _register_responses(self) -> None:
        """Document the default error responses as problem+json (flask-smorest: JSON)."""
        default: str = getattr(self, "DEFAULT_RESPONSE_CONTENT_TYPE", "application/json")
        self.DEFAULT_RESPONSE_CONTENT_TYPE = PROBLEM_JSON
        try:
            super()._register_responses()
        finally:
            self.DEFAULT_RESPONSE_CONTENT_TYPE = default


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The app. ``config`` entries override Flask settings and, under their environment
    variable names (``KALAH_REDIS_URL`` ...), the environment."""
    config = dict(config or {})
    settings: Settings = load_settings({k: v for k, v in config.items() if k in ENV_NAMES})

    app = Flask(__name__)
    app.config.update(
        API_TITLE="Kalah analysis API",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        API_SPEC_OPTIONS={
            "info": {
                "description": API_DESCRIPTION,
                "license": {"name": "MIT"},
                "x-package-version": __version__,
            },
        },
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        MAX_FORM_MEMORY_SIZE=MAX_BODY_BYTES,
    )
    app.config.update({k: v for k, v in config.items() if k not in ENV_NAMES})

    cache = backends.make_answer_store(settings, max_connections=settings.threads + 4)
    app.extensions["kalah"] = Analyser(settings, cache, meter=RequestMeter())
    backends.check_state(settings)
    app.extensions["kalah_state"] = backends.make_state_ping(settings)
    app.extensions["kalah_jobs"] = backends.make_job_store(settings)

    plugins = [
        analysis_routes.ConditionalGetPlugin(),
        RateLimitDocsPlugin(),
        OperationIds(),
        ServerLimitsPlugin(settings),
    ]
    api = KalahApi(app, spec_kwargs={"extra_plugins": plugins})
    for name, component in COMPONENTS.items():
        api.spec.components.schema(name, component)
    converter = api.ma_plugin.converter
    assert converter is not None  # made when the Api built its spec
    converter.add_attribute_function(component_ref)  # type: ignore[no-untyped-call]  # apispec leaves it unannotated
    for resource in RESOURCES:
        api.register_blueprint(resource.blp)
    app.extensions["kalah_api"] = api
    app.register_blueprint(board_page.bp)  # the board at / and the docs UI at /docs

    _register_error_handlers(app)
    _register_metrics(app)
    _register_callers_and_limits(app, settings)
    init_body_guard(app, on_read=charge_body)
    return app


def _register_callers_and_limits(app: Flask, settings: Settings) -> None:
    """Proxies, API keys, cost-based rate limits, CORS and security headers (in this order:
    the caller is known before the limiter charges it)."""
    if settings.trusted_proxies:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.trusted_proxies)  # type: ignore[method-assign]  # Flask's way to add middleware
        # Outside ProxyFix: X-Forwarded-For and Forwarded read alike (see
        # kalah_service.edge.forwarding). Without ProxyFix the environ stays as it arrived,
        # which is what the forwarding module reads then: no middleware needed.
        app.wsgi_app = ForwardedFor(app.wsgi_app, settings.trusted_proxies)  # type: ignore[method-assign]  # Flask's way to add middleware
    auth = Authenticator(backends.make_key_store(settings))
    app.extensions["kalah_auth"] = auth

    # The caller is resolved when its request is admitted: a bad key is a 401 charged to the
    # client's IP (so guessing keys is rate limited), before any body is read.
    init_rate_limits(app, settings, auth, backends.make_counters(settings))
    init_security(app, settings)


def _register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ApiProblem, problem_for)
    app.register_error_handler(KalahError, problem_for)
    app.register_error_handler(HTTPException, problem_for)

    @app.errorhandler(Exception)
    def unhandled(error: Exception) -> Response:
        return problem_for(error)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Metric labels stay bounded: unknown paths are ``unmatched``, unknown methods ``other``."""


def _register_metrics(app: Flask) -> None:
    @app.before_request
    def start_timer() -> None:
        g.kalah_started = time.perf_counter()

    @app.after_request
    def observe(response: Response) -> Response:
        started = g.pop("kalah_started", None)
        if started is not None:
            endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
            method = request.method if request.method in _METHODS else "other"
            labels = (endpoint, method, str(response.status_code))
            metrics.REQUESTS.labels(*labels).inc()
            metrics.LATENCY.labels(*labels).observe(time.perf_counter() - started)
        return response


def openapi_text(app: Flask | None = None) -> str:
    """The OpenAPI document as committed in ``api/openapi.json``: built from an app with every
    setting at its default, so that the environment never changes it."""
    if app is None:
        app = create_app(dict.fromkeys(ENV_NAMES))
    spec = app.extensions["kalah_api"].spec.to_dict()
    return json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
