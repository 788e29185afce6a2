"""The problems of the service, without HTTP: the one table of problem types, the exception
the core raises for a bad input (:class:`ApiProblem`), and a problem as a plain object.

Every error answer is an RFC 9457 problem with ``type``, ``title``, ``status``, ``detail``
and, when one input is at fault, ``field`` naming it (a dotted path into the request, e.g.
``limits.time_ms``, ``rules.houses``, ``moves.3``). :data:`PROBLEMS` gives each problem type
its status, title and log level; :mod:`kalah_service.edge.http_errors` renders them as HTTP answers,
and a batch puts :func:`problem_object` in the slot of an item that cannot be analysed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from kalah_core.errors import (
    IllegalMoveError,
    InvalidNotationError,
    InvalidPositionError,
    InvalidRulesError,
    KalahError,
)

TYPE_PREFIX = "/problems/"


@dataclass(frozen=True, slots=True)
class ProblemType:
    slug: str
    status: int
    title: str
    description: str
    log_level: int = logging.INFO


# One status per class of error: 400 a body that is not JSON at all (or not HTTP), 422 a
# well-formed request whose content is invalid (a field: rules, position, notation, a move, a
# budget), 401 a key, 404 a job, 408/413/415 how the body was sent, 429 the rate limit, 503
# the service. docs/api.md lists them; a test checks the list against this table.
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
            422,
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
            "A dependency is not available: the engine, or a store that fails (the state "
            "Redis, the job store, the rate limits' counters); Retry-After says when to try "
            "again.",
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

CORE_ERRORS: tuple[tuple[type[KalahError], str], ...] = (
    (InvalidRulesError, "invalid-rules"),
    (InvalidNotationError, "invalid-notation"),
    (InvalidPositionError, "invalid-position"),
    (IllegalMoveError, "illegal-move"),
)


class ApiProblem(Exception):
    """A bad input or a refusal that is not the engine's own error; rendered as problem+json."""

    def __init__(
        self,
        slug: str,
        detail: str,
        *,
        field: str | None = None,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        **extra: object,
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


def slug_of(error: KalahError) -> str:
    """The problem type of an engine error."""
    if type(error) is KalahError:
        return "invalid-request"
    return next(s for cls, s in CORE_ERRORS if isinstance(error, cls))


def problem_object(
    error: ApiProblem | KalahError, *, field: str | None = None
) -> dict[str, object]:
    """The problem+json body of a bad input as a plain object: a batch puts one in the slot of
    each item that cannot be analysed instead of failing the whole batch."""
    if isinstance(error, ApiProblem):
        slug, detail, status, extra = error.slug, error.detail, error.status, error.extra
        field = field or error.field
    else:
        slug = slug_of(error)
        detail, status, extra, field = str(error), PROBLEMS[slug].status, {}, field or error.field
    body: dict[str, object] = {
        "type": TYPE_PREFIX + slug,
        "title": PROBLEMS[slug].title,
        "status": status,
        "detail": bounded(detail),
    }
    if field is not None:
        body["field"] = bounded(field)
    body.update(extra)
    return body


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
