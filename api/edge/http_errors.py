"""Every error as an HTTP answer: RFC 9457 ``application/problem+json``.

The problem types and the exception the core raises are in :mod:`kalah_service.core.problems`; here
:func:`problem_for` maps every exception the service can meet (a problem, an engine error, a
webargs validation failure, any HTTP error, a bug) onto one problem+json answer with
``instance``, and :func:`document_problems` documents a view's error answers in the spec.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from flask import Response, has_request_context, json, request
from werkzeug.exceptions import HTTPException

from kalah_core.errors import KalahError

from ..base.config import MAX_BODY_BYTES
from ..core.problems import PROBLEMS, TYPE_PREFIX, ApiProblem, bounded, slug_of
from ..schemas.answers import ProblemSchema

if TYPE_CHECKING:
    from flask_smorest import Blueprint

PROBLEM_JSON = "application/problem+json"

log = logging.getLogger("kalah_service")

View = TypeVar("View")


def problem_response(
    status: int,
    title: str,
    detail: str,
    *,
    type_: str = "about:blank",
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: object,
) -> Response:
    body: dict[str, object] = {
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
    **extra: object,
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
    return _typed(slug_of(error), str(error), field=field or error.field)


def _first_field(messages: object, prefix: str = "") -> tuple[str | None, str]:
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
        request.environ["kalah.close"] = (
            True  # the body is not read: close (kalah_service.ops.gworker)
        )
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


def document_problems(blp: Blueprint, errors: Mapping[int, str]) -> Callable[[View], View]:
    """A view decorator documenting each ``status: description`` of ``errors`` as a
    problem+json response of ``blp`` (a flask-smorest Blueprint) in the spec."""

    def decorate(view: View) -> View:
        for status, description in errors.items():
            view = blp.alt_response(
                status, schema=ProblemSchema, content_type=PROBLEM_JSON, description=description
            )(view)
        return view

    return decorate
