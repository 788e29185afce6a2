"""One error envelope for everything: RFC 9457 ``application/problem+json``.

Every error answer has ``type``, ``title``, ``status``, ``detail``, ``instance`` and, when one
input is at fault, ``field`` naming it (dotted path into the request, e.g. ``limits.time_ms``,
``rules.houses``, ``moves.3``). :data:`PROBLEMS` is the one table of problem types: status,
title and log level; :func:`problem_for` maps every exception the service can meet onto it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flask import Response, has_request_context, json, request
from werkzeug.exceptions import HTTPException

from kalah_core.errors import (
    IllegalMoveError,
    InvalidNotationError,
    InvalidPositionError,
    InvalidRulesError,
    KalahError,
)

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "/problems/"

log = logging.getLogger("api")


@dataclass(frozen=True, slots=True)
class ProblemType:
    slug: str
    status: int
    title: str
    description: str
    log_level: int = logging.INFO


PROBLEMS: dict[str, ProblemType] = {
    p.slug: p
    for p in (
        ProblemType(
            "invalid-rules",
            422,
            "Invalid rules",
            "An unknown preset, an unknown rule option or a value outside its range.",
        ),
        ProblemType(
            "invalid-position",
            422,
            "Invalid position",
            "A position that is malformed or impossible under the rules.",
        ),
        ProblemType(
            "invalid-notation",
            400,
            "Invalid notation",
            "A compact position or a game in the Finnish notation that cannot be parsed.",
        ),
        ProblemType(
            "illegal-move",
            422,
            "Illegal move",
            "A move that is not legal in the position it is played in.",
        ),
        ProblemType(
            "invalid-request", 422, "Invalid request", "A parameter or body field fails validation."
        ),
        ProblemType("malformed-body", 400, "Malformed body", "The request body is not valid JSON."),
        ProblemType(
            "unsupported-media-type",
            415,
            "Unsupported media type",
            "A request body that is not JSON (Content-Type: application/json).",
        ),
        ProblemType(
            "limit-exceeded",
            422,
            "Limit exceeded",
            "A budget (time, depth, nodes) above the server's maximum.",
        ),
        ProblemType(
            "request-timeout",
            408,
            "Request timeout",
            "The client stopped sending its request body (KALAH_CLIENT_TIMEOUT_S).",
        ),
        ProblemType(
            "body-too-large",
            413,
            "Request body too large",
            "The request body is above the server's maximum.",
        ),
        ProblemType("not-found", 404, "Not found", "An unknown or expired batch job."),
        ProblemType(
            "unauthorized",
            401,
            "Unauthorized",
            "The Authorization header is malformed or names an unknown or revoked API key.",
        ),
        ProblemType(
            "key-required",
            401,
            "API key required",
            "This endpoint is for API key holders: send 'Authorization: Bearer <key>'.",
        ),
        ProblemType(
            "rate-limited",
            429,
            "Too many requests",
            "The caller's rate limit (in cost units, see the API description) is spent; "
            "Retry-After says when to try again.",
        ),
        ProblemType(
            "not-ready",
            503,
            "Service not ready",
            "A dependency (Redis, the engine) is not available.",
        ),
        ProblemType(
            "busy",
            503,
            "Engines busy",
            "Every engine of the worker that took the request is searching and the wait would "
            "be longer than the request's own budget; Retry-After says when to try again.",
        ),
        ProblemType(
            "internal-error", 500, "Internal error", "A bug: please report it.", logging.ERROR
        ),
    )
}

_CORE_ERRORS: tuple[tuple[type[KalahError], str], ...] = (
    (InvalidRulesError, "invalid-rules"),
    (InvalidNotationError, "invalid-notation"),
    (InvalidPositionError, "invalid-position"),
    (IllegalMoveError, "illegal-move"),
)


class ApiProblem(Exception):
    """Raised by routes for an error that is not the core's; rendered as problem+json."""

    def __init__(
        self,
        slug: str,
        detail: str,
        *,
        field: str | None = None,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.slug = slug
        self.detail = detail
        self.field = field
        self.status = status or PROBLEMS[slug].status
        self.headers = dict(headers or {})
        self.extra = extra


MAX_DETAIL_CHARS = 240
"""A problem's ``detail`` and ``field`` are cut to this length: they may quote the client's input
(an unknown option's name, a bad value), which must never be echoed, logged or stored unbounded
(a batch job stores each bad item's problem for a day)."""


def bounded(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``text``, cut to ``limit`` characters (an ellipsis marks the cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def problem_response(
    status: int,
    title: str,
    detail: str,
    *,
    type_: str = "about:blank",
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    body: dict[str, Any] = {
        "type": type_,
        "title": title,
        "status": status,
        "detail": bounded(detail),
    }
    if has_request_context():
        body["instance"] = bounded(request.path)
    if field is not None:
        body["field"] = bounded(field)
    body.update(extra)
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_JSON)
    response.headers["Cache-Control"] = "no-store"
    if headers:
        response.headers.update(headers)
    return response


def _typed(
    slug: str,
    detail: str,
    *,
    field: str | None,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    problem = PROBLEMS[slug]
    log.log(
        problem.log_level,
        "%s %s: %s (%s)",
        request.method,
        bounded(request.path),
        bounded(detail),
        bounded(field or ""),
    )
    return problem_response(
        status or problem.status,
        problem.title,
        detail,
        type_=TYPE_PREFIX + slug,
        field=field,
        headers=headers,
        **extra,
    )


def core_problem(error: KalahError, *, field: str | None = None) -> Response:
    slug = (
        next(s for cls, s in _CORE_ERRORS if isinstance(error, cls))
        if type(error) is not KalahError
        else "invalid-request"
    )
    return _typed(slug, str(error), field=field or error.field)


def _first_field(messages: Any, prefix: str = "") -> tuple[str | None, str]:
    """The dotted path and message of the first error in a marshmallow ``messages`` tree."""
    if isinstance(messages, Mapping):
        for key, value in messages.items():
            if key == "_schema":
                return (prefix or None), _first_field(value)[1]
            path = f"{prefix}.{key}" if prefix else str(key)
            return _first_field(value, path)
        return (prefix or None), "invalid"
    if isinstance(messages, list) and messages:
        if all(isinstance(m, str) for m in messages):
            return (prefix or None), " ".join(messages)
        return _first_field(messages[0], prefix)
    return (prefix or None), str(messages)


def validation_problem(error: HTTPException) -> Response:
    """A webargs/flask-smorest validation failure: ``messages`` is ``{location: {field: [..]}}``."""
    data = getattr(error, "data", None) or {}
    messages = data.get("messages") or data.get("errors") or {}
    location_free = {k: v for k, v in messages.items()} if isinstance(messages, Mapping) else {}
    # drop the location level ("json", "query") that webargs adds
    if len(location_free) == 1 and next(iter(location_free)) in (
        "json",
        "query",
        "form",
        "headers",
        "files",
    ):
        messages = next(iter(location_free.values()))
    field, reason = _first_field(messages)
    if error.code == 400:
        return _typed(
            "malformed-body", f"the request body is not valid JSON ({reason})", field="body"
        )
    detail = f"{field}: {reason}" if field else reason
    return _typed("invalid-request", detail, field=field or "body")


def http_problem(error: HTTPException) -> Response:
    """Any other HTTP error (404, 405, 413, ...) as problem+json."""
    code = error.code or 500
    if code == 422 or (code == 400 and getattr(error, "data", None)):
        return validation_problem(error)
    if code == 413:
        from .config import MAX_BODY_BYTES

        request.environ["kalah.close"] = True  # the body is not read: close (api.gworker)
        limit = request.max_content_length or MAX_BODY_BYTES
        return _typed(
            "body-too-large",
            f"request bodies are limited to {limit} bytes",
            field="body",
            max=limit,
        )
    if code == 400:
        return _typed("malformed-body", "the request body is not valid JSON", field="body")
    headers = {}
    if code == 405 and hasattr(error, "valid_methods") and error.valid_methods:
        headers["Allow"] = ", ".join(error.valid_methods)
    description = error.description or error.name
    if code == 404:
        description = f"no resource at {request.path}; see /docs for the API"
    elif code == 405:
        description = f"{request.method} is not allowed on {request.path}"
    return problem_response(code, error.name, description, headers=headers)


def problem_object(error: ApiProblem | KalahError, *, field: str | None = None) -> dict[str, Any]:
    """The problem+json body of a bad input as a plain object: a batch puts one in the slot of
    each item that cannot be analysed instead of failing the whole batch."""
    if isinstance(error, ApiProblem):
        slug, detail, status, extra = error.slug, error.detail, error.status, error.extra
        field = field or error.field
    else:
        slug = (
            next(s for cls, s in _CORE_ERRORS if isinstance(error, cls))
            if type(error) is not KalahError
            else "invalid-request"
        )
        detail, status, extra, field = str(error), PROBLEMS[slug].status, {}, field or error.field
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + slug,
        "title": PROBLEMS[slug].title,
        "status": status,
        "detail": bounded(detail),
    }
    if field is not None:
        body["field"] = bounded(field)
    body.update(extra)
    return body


def problem_for(error: BaseException) -> Response:
    """The problem+json answer for any exception raised while handling a request."""
    if isinstance(error, ApiProblem):
        return _typed(
            error.slug,
            error.detail,
            field=error.field,
            status=error.status,
            headers=error.headers,
            **error.extra,
        )
    if isinstance(error, KalahError):
        return core_problem(error)
    if isinstance(error, HTTPException):
        return http_problem(error)
    log.exception("unhandled error on %s %s", request.method, request.path, exc_info=error)
    return _typed("internal-error", "an internal error occurred", field=None)


@contextmanager
def renamed_field(rename: Callable[[str | None], str]) -> Iterator[None]:
    """A core error raised inside gets its ``field`` renamed by ``rename`` (e.g. the rule
    option ``houses`` becomes ``rules.houses``), so the problem names the request's field
    rather than the core's argument."""
    try:
        yield
    except KalahError as error:
        error.field = rename(error.field)
        raise


def rules_field(prefix: str | None) -> Callable[[str | None], str]:
    """Rename for rule errors: ``preset``/``rules`` stay ``rules``; an option gets ``prefix.``."""

    def rename(field: str | None) -> str:
        if field in (None, "rules", "preset"):
            return "rules"
        return f"{prefix}.{field}" if prefix else str(field)

    return rename


def document_problems(blp: Any, errors: Mapping[int, str]) -> Callable[[Any], Any]:
    """A view decorator documenting each ``status: description`` of ``errors`` as a
    problem+json response of ``blp`` (a flask-smorest Blueprint) in the spec."""
    from .schemas import ProblemSchema

    def decorate(view: Any) -> Any:
        for status, description in errors.items():
            view = blp.alt_response(
                status, schema=ProblemSchema, content_type=PROBLEM_JSON, description=description
            )(view)
        return view

    return decorate
