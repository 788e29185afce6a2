"""Rate limits charged by cost (flask-limiter), one bucket per caller shared by every endpoint.

The caller is its API key, or its IP address when it sends none (:mod:`api.keys`); its tier
sets the bucket's size (``KALAH_LIMIT_<TIER>``, e.g. ``120/minute`` units). Every request
under ``/v1/`` costs, in units:

- its endpoint's base cost: :data:`ROUTE_COSTS`, 1 for an endpoint not listed;
- plus 1 per started :data:`SEARCH_UNIT_MS` of search the request ran (:func:`charge_search`):
  a cached answer runs none, an uncached one at the default 1 s budget costs up to 11;
- plus whatever the view charges with :func:`charge`; a batch run as a job calls
  :func:`charge_batch`: a key is required and each item costs 1 unit, paid up front (its
  search runs later on the workers, whose queue is the limit on search time; the batch's
  total budget is capped by ``KALAH_BATCH_MAX_BUDGET_MS``). A batch answered inline pays for
  the search it ran, like single analyses.

A request is admitted while its bucket holds its base cost; the full cost is deducted when the
answer is sent (a search's length is only known then), so the last search of a window may
take a bucket below zero, and that debt delays the next window. Buckets are fixed windows in
Redis when ``KALAH_REDIS_URL`` is set (shared by every worker and replica; an unreachable Redis
falls back to per-process memory until it is back), in process memory otherwise. Answers
carry ``RateLimit-Limit``, ``RateLimit-Remaining``, ``RateLimit-Reset`` (Unix time) and
``Kalah-Cost``; a spent bucket is a 429 problem with ``Retry-After``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from apispec import APISpec, BasePlugin
from flask import Flask, Response, current_app, g, request
from flask_limiter import HeaderNames, Limiter, RequestLimit

from .config import Settings
from .errors import ApiProblem
from .keys import Authenticator

ROUTE_COSTS: Mapping[str, int] = {}
"""Base cost of an endpoint (Flask endpoint name, e.g. ``"batch.Batch"``), 1 when absent."""

SEARCH_UNIT_MS = 100
"""A request is charged one more unit per started this many milliseconds of search."""

LIMITED_PREFIX = "/v1/"
"""Paths that are charged; health, metrics, the spec and the docs are free."""

KEY_PREFIX = "kalah:rl"

STATS_TTL_S = 0.25
"""How long a worker reuses a caller's window stats for the RateLimit headers, counting its own
charges meanwhile: the headers then cost no Redis round trip on most requests (a cached answer
pays two: the limiter's test and its deduction). Other workers' charges show within this."""

HEADERS = {
    HeaderNames.LIMIT: "RateLimit-Limit",
    HeaderNames.REMAINING: "RateLimit-Remaining",
    HeaderNames.RESET: "RateLimit-Reset",
    HeaderNames.RETRY_AFTER: "Retry-After",
}


def _limited() -> bool:
    return request.path.startswith(LIMITED_PREFIX) and request.method != "OPTIONS"


def base_cost() -> int:
    return ROUTE_COSTS.get(request.endpoint or "", 1)


def request_cost() -> int:
    """What the current request costs so far: its base cost plus what it has charged."""
    return base_cost() + int(g.get("kalah_charge", 0))


def charge(units: int, *, upfront: bool = False) -> None:
    """Add ``units`` to the current request's cost. ``upfront``: first check that the
    caller's bucket holds the whole cost so far, else a 429 problem (nothing more is charged);
    for work whose size is known before it starts (a batch of N items)."""
    if upfront:
        ensure_budget(request_cost() + units)
    g.kalah_charge = int(g.get("kalah_charge", 0)) + units


def charge_search(search_ms: float) -> None:
    """Charge a search that ran ``search_ms`` milliseconds in this request (0: cached)."""
    if search_ms > 0:
        charge(search_cost(search_ms))


def search_cost(time_ms: float) -> int:
    """Units for a search of ``time_ms`` milliseconds."""
    return math.ceil(time_ms / SEARCH_UNIT_MS) if time_ms > 0 else 0


def charge_batch(items: int) -> None:
    """The hook of an endpoint that queues ``items`` analyses for background workers: it
    needs an API key (a 401 problem without one) and each item costs 1 unit up front (a 429
    problem if the bucket cannot pay them all)."""
    from .keys import require_key

    require_key()
    charge(items, upfront=True)


def ensure_budget(units: int) -> None:
    """A 429 problem unless every bucket of the current request holds ``units``."""
    limiter: Limiter = current_app.extensions["kalah_limiter"]
    for limit in limiter.current_limits:
        reset, remaining = limiter.limiter.get_window_stats(limit.limit, *limit.request_args)
        if remaining < units:
            raise ApiProblem(
                "rate-limited",
                f"this request costs {units} units and only {remaining} of "
                f"{limit.limit.amount} are left until the window resets",
                field=None,
                headers={"Retry-After": str(max(1, math.ceil(reset - time.time())))},
            )


def init_rate_limits(app: Flask, settings: Settings, auth: Authenticator) -> Limiter:
    """Attach the limiter (after the caller is resolved, see :func:`api.create_app`)."""

    def tier_limit() -> str:
        return settings.tier_limit(auth.caller().tier)

    timeout = settings.redis_timeout_s
    options: dict[str, Any] = (
        {"socket_timeout": timeout, "socket_connect_timeout": timeout} if settings.redis_url else {}
    )
    limiter = Limiter(
        key_func=lambda: auth.caller().identity,
        application_limits=[tier_limit],
        application_limits_cost=request_cost,
        application_limits_deduct_when=lambda response: response.status_code != 429,
        storage_uri=settings.redis_url or "memory://",
        storage_options=options,
        strategy="fixed-window",
        key_prefix=KEY_PREFIX,
        headers_enabled=False,  # ours, from the cached window stats (see _WindowStats)
        swallow_errors=True,  # a storage failure never fails a request
        in_memory_fallback_enabled=True,
    )
    limiter.request_filter(lambda: not _limited())

    stats = _WindowStats()

    # Registered before the limiter's own hook, so it runs after it (Flask reverses them):
    # this request's cost is deducted by then.
    @app.after_request
    def cost_headers(response: Response) -> Response:
        if not _limited() or g.get("kalah_caller") is None:
            return response
        refused = response.status_code == 429  # refused requests are not charged
        cost = 0 if refused else request_cost()
        response.headers["Kalah-Cost"] = str(cost)
        limits = limiter.current_limits
        if not limits:
            return response
        try:
            reset, remaining = stats.get(limiter, limits[0], cost, fresh=refused)
        except Exception:  # the limiter's storage failed: no headers, the answer stands
            return response
        response.headers[HEADERS[HeaderNames.LIMIT]] = str(limits[0].limit.amount)
        response.headers[HEADERS[HeaderNames.REMAINING]] = str(max(0, remaining))
        response.headers[HEADERS[HeaderNames.RESET]] = str(int(reset + 1))
        if refused and "Retry-After" not in response.headers:
            response.headers["Retry-After"] = str(max(1, math.ceil(reset - time.time())))
        return response

    limiter.init_app(app)
    app.extensions["kalah_limiter"] = limiter
    return limiter


class _WindowStats:
    """Each caller's window (reset time, units remaining) as last read from the limiter's
    storage, reused for :data:`STATS_TTL_S` while this worker's own charges are counted off."""

    MAX_CALLERS = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, float, int]] = {}  # key -> (read at, reset, left)

    def get(
        self, limiter: Limiter, limit: RequestLimit, cost: int, *, fresh: bool = False
    ) -> tuple[float, int]:
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(limit.key)
            if seen is not None and not fresh and now - seen[0] < STATS_TTL_S:
                read_at, reset, left = seen
                if time.time() < reset:
                    self._seen[limit.key] = (read_at, reset, left - cost)
                    return reset, left - cost
        reset, left = limiter.limiter.get_window_stats(limit.limit, *limit.request_args)
        with self._lock:
            if len(self._seen) >= self.MAX_CALLERS:
                self._seen.clear()
            self._seen[limit.key] = (now, reset, left)
        return reset, left


COSTS_DOC = f"""\
**Rate limits.** Every `/v1/` request is charged in cost units against its caller's bucket:
the API key of `Authorization: Bearer <key>`, or the client IP without one (the `anonymous`
tier). A request costs 1 unit, plus 1 per started {SEARCH_UNIT_MS} ms of search it ran (a
cached answer runs none; an uncached one at the default 1 s budget costs up to 11); a batch
run as a job needs an API key and costs 1 unit per position, paid up front. Answers carry
`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
(Unix time of the window's end) and `Kalah-Cost` (what this request cost); a spent bucket is a
429 problem with `Retry-After`. An unknown or revoked key is a 401 problem. Each tier's size is
this server's `KALAH_LIMIT_<TIER>` setting (see the README).
"""

_HEADER_DOCS = {
    "RateLimit-Limit": "Units in the caller's bucket per window.",
    "RateLimit-Remaining": "Units left in the current window after this request.",
    "RateLimit-Reset": "Unix time at which the current window ends.",
    "Kalah-Cost": "Units this request was charged.",
}


class RateLimitDocsPlugin(BasePlugin):
    """Documents the charged operations: optional bearer authentication, the rate-limit
    headers and the 401 and 429 problems, on every path under ``/v1/``."""

    def init_spec(self, spec: APISpec) -> None:
        spec.components.security_scheme(
            "apiKey",
            {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key made by `kalah keys create`; optional: without one "
                "the caller is anonymous, limited by IP.",
            },
        )

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not path or not path.startswith(LIMITED_PREFIX) or not operations:
            return
        problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        headers = {
            n: {"description": d, "schema": {"type": "integer"}} for n, d in _HEADER_DOCS.items()
        }
        for operation in operations.values():
            operation.setdefault("security", [{}, {"apiKey": []}])
            responses = operation.setdefault("responses", {})
            for status in ("200", "304"):
                if status in responses:
                    responses[status].setdefault("headers", {}).update(headers)
            responses.setdefault(
                "401",
                {"description": "Unknown, revoked or malformed API key.", "content": problem},
            )
            responses.setdefault(
                "429",
                {
                    "description": "The caller's rate limit is spent (see the API description).",
                    "content": problem,
                    "headers": {
                        "Retry-After": {
                            "description": "Seconds until the bucket refills.",
                            "schema": {"type": "integer"},
                        },
                        **headers,
                    },
                },
            )
