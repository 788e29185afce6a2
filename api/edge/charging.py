"""Charging, in one place: who is limited, admission, reservations, the bill of each request
and its settlement, as Flask hooks.

The caller is its API key, or its IP address when it sends none (:mod:`kalah_service.edge.callers`);
its tier sets the bucket's size (``KALAH_LIMIT_<TIER>``, e.g. ``120/minute`` units, the syntax of
the ``limits`` library). ``KALAH_LIMITS`` says who is limited (:func:`limits_apply`). What things
cost is :mod:`kalah_service.ratelimit.costs`; how buckets are counted across workers,
:mod:`kalah_service.ratelimit.buckets`.

A request's life:

1. **Admission** (before any body is read): the caller's bucket must hold its base cost; a
   body above the free size reserves its cost (:func:`kalah_service.ratelimit.costs.body_cost`) at
   once, from ``Content-Length``, so a body the caller cannot pay for is refused (429) before it is
   read or parsed, and one it can pay for stays paid even if the request is refused later. A
   chunked body is reserved for when it has been read, before it is parsed
   (:func:`charge_body`, called by :mod:`kalah_service.edge.bounds`).
2. **Reservations**: a search reserves its budget's cost before it runs (the analyser's meter,
   :class:`RequestMeter`); a game review its whole budget (:meth:`RequestMeter.prepay`); a
   batch job what posting it costs (:func:`charge_batch`; its searches are charged to the
   caller as they run, :meth:`~kalah_service.ratelimit.buckets.Buckets.charge_later`). Each is
   counted at once in the shared counters, so concurrent requests on every worker cannot overdraw a
   bucket by them.
3. **Settlement** (after the request): the cost is the base cost, the body, and the search
   time actually run (the review's own time, at most its budget); what was reserved and not
   spent is refunded. A refused request (429) pays only a body it had read; a request the
   service failed (5xx) pays nothing. The ``RateLimit-*`` headers of a 429 give the figures the
   refusal was decided on, so concurrent refusals agree with their details.

A limited request while the shared counters fail (Redis down or answering errors, a full disk,
a corrupt file) is a 503 ``not-ready`` problem with ``Retry-After``, charged nothing: limits
that cannot be counted are not silently lifted, and a store fault is never a 500
(docs/deploy.md, "Store faults").

Answers carry ``RateLimit-Limit``, ``RateLimit-Remaining``, ``RateLimit-Reset`` (Unix time) and
``Kalah-Cost``; a spent bucket is a 429 problem with ``Retry-After``.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import Flask, Response, current_app, g, has_request_context, request
from limits import RateLimitItem, parse_many

from ..base.config import Settings
from ..core.problems import ApiProblem
from ..ratelimit.buckets import RETRY_S, Admitted, Buckets, CountersFailing
from ..ratelimit.costs import base_cost, body_cost, job_cost, search_cost
from ..stores.counters import Counters
from .bounds import stop_reading
from .callers import Authenticator, require_key
from .forwarding import forwarded

LIMITED_PREFIX = "/v1/"
"""Paths that are charged; health, metrics, the spec and the docs are free."""


def _charged_path() -> bool:
    return request.path.startswith(LIMITED_PREFIX) and request.method != "OPTIONS"


def _settings() -> Settings:
    settings: Settings = current_app.extensions["kalah"].settings
    return settings


def limits_apply(settings: Settings) -> bool:
    """Whether the current request's caller is rate limited: ``KALAH_LIMITS`` ``on``, or
    ``auto`` unless the server runs embedded (no state store) and the caller connected from a
    loopback address with no ``X-Forwarded-For`` or ``Forwarded`` header, even an empty one
    (a person on their own machine; a request through a reverse proxy on that machine is
    limited). A relay that adds no header (socat, ``ssh -L``) looks like that person: exposing
    the port needs ``--behind-proxy`` or ``KALAH_LIMITS=on`` (docs/deploy.md)."""
    return _applies(_mode(settings))


def _mode(settings: Settings) -> str:
    """``KALAH_LIMITS`` with what the settings alone decide: ``auto`` with a state store is
    ``on``."""
    return "on" if settings.limits == "auto" and settings.state_url else settings.limits


def _applies(mode: str) -> bool:
    """Whether the current request is limited under ``mode`` (see :func:`limits_apply`)."""
    if mode != "auto":
        return mode == "on"
    # Without a forwarding header no proxy fix rewrote the peer, so a client not on loopback
    # is limited whatever the headers say: they are read only for a loopback one.
    return not _loopback(request.remote_addr) or forwarded(request.environ)


def _loopback(address: str | None) -> bool:
    try:
        return ipaddress.ip_address(address or "").is_loopback
    except ValueError:
        return False


# -- the current request's bill ------------------------------------------------------------


@dataclass(slots=True)
class Refusal:
    """What a 429 was decided on: the limit, the units left in it and when it resets."""

    item: RateLimitItem
    left: int
    reset: float


def _buckets() -> Buckets:
    buckets: Buckets = current_app.extensions["kalah_limits"]
    return buckets


def _refuse(refusal: Refusal, detail: str) -> ApiProblem:
    g.kalah_refusal = refusal
    return ApiProblem(
        "rate-limited",
        detail,
        field=None,
        headers={"Retry-After": _retry_after(refusal.reset)},
    )


@contextmanager
def _counted() -> Iterator[None]:
    """Counters that fail are a 503 problem with Retry-After (nothing is charged)."""
    try:
        yield
    except CountersFailing:
        raise ApiProblem(
            "not-ready",
            "the rate limits cannot be counted now (their store is failing); try again later",
            headers={"Retry-After": str(max(1, math.ceil(RETRY_S)))},
        ) from None


def request_cost() -> int:
    """What the current request costs so far: its base cost, its body and its charges."""
    return base_cost(request.endpoint) + int(g.get("kalah_body", 0)) + int(g.get("kalah_charge", 0))


def charge(units: int, *, upfront: bool = False) -> None:
    """Add ``units`` to the current request's cost. ``upfront``: first check that the
    caller's bucket holds the whole cost so far, else a 429 problem (nothing more is charged);
    for work whose size is known before it starts (a batch of N items)."""
    if upfront:
        ensure_budget(request_cost() + units)
    g.kalah_charge = int(g.get("kalah_charge", 0)) + units


def charge_search(search_ms: float, *, budget_ms: float | None = None) -> None:
    """Charge a search that ran ``search_ms`` milliseconds in this request (0: cached), at
    most the cost of its ``budget_ms`` (what was reserved for it)."""
    if budget_ms is not None:
        search_ms = min(search_ms, budget_ms)
    if search_ms > 0:
        charge(search_cost(search_ms))


def reserve(units: int) -> None:
    """Reserve ``units`` of the caller's bucket before work of at most that cost starts: a
    429 problem if any bucket cannot hold them. The reservation is counted at once where every
    worker sees it (atomically), and what the request does not spend is refunded when it ends
    (see the module docstring)."""
    window: Admitted | None = g.get("kalah_window")
    if window is None or units <= 0:
        return
    if "kalah_reserved" not in g:  # the first reservation holds the request's base cost too
        units += base_cost(request.endpoint)
    buckets = _buckets()
    with _counted():
        refused = buckets.reserve(window.identity, window.items, units)
    if refused is not None:
        reset, left = buckets.window(window.identity, refused)
        left = max(left, 0)
        raise _refuse(
            Refusal(refused, left, reset),
            f"this request may cost {int(g.get('kalah_reserved', 0)) + units} units and only "
            f"{left} of {refused.amount} are left until the window resets",
        )
    g.kalah_reserved = int(g.get("kalah_reserved", 0)) + units


def charge_body(length: int | None) -> None:
    """Reserve what reading and parsing a body of ``length`` bytes costs, before it is parsed
    (at admission from ``Content-Length``; for a chunked body once it is read)."""
    units = body_cost(length)
    if units <= 0 or g.get("kalah_window") is None:
        return
    reserve(units)
    g.kalah_body = int(g.get("kalah_body", 0)) + units


def ensure_budget(units: int) -> None:
    """A 429 problem unless every bucket of the current request holds ``units`` (after a
    sync with the counters: an up-front charge is large, so it is checked against fresh
    totals)."""
    window: Admitted | None = g.get("kalah_window")
    if window is None:
        return
    buckets = _buckets()
    with _counted():
        buckets.sync()
        buckets.check()
    for item in window.items:
        reset, left = buckets.window(window.identity, item)
        # What this request reserved is counted in the bucket already.
        left += int(g.get("kalah_reserved", 0))
        if left < units:
            left = max(left, 0)
            raise _refuse(
                Refusal(item, left, reset),
                f"this request costs {units} units and only {left} of {item.amount} are "
                "left until the window resets",
            )


def charge_batch(items: int, first_units: int, *, need_key: bool = True) -> None:
    """The hook of an endpoint that queues analyses for background workers: it needs an API
    key when ``need_key`` (a 401 problem without one) and costs
    :func:`kalah_service.ratelimit.costs.job_cost` of its ``items`` (bad ones included), paid up
    front; the bucket must also hold ``first_units`` (the cost of the first chunk's searches, a 429
    problem otherwise), which are not charged here: the searches are charged as they run
    (:func:`payer`,
    :meth:`~kalah_service.ratelimit.buckets.Buckets.charge_later`)."""
    if need_key:
        require_key()
    units = job_cost(items)
    ensure_budget(request_cost() + units + first_units)
    reserve(units)
    charge(units)


def charge_stream(budget_ms: int) -> Callable[[float], None]:
    """A search whose time is known only after its response has started (a live analysis,
    whose request is settled before its first event): its whole budget is reserved and
    charged with the request now, and the function returned, called (once) with the time the
    search ran when it ends, refunds the rest in the shared counters. No caller can overdraw
    a bucket by opening streams, and each pays what its search ran."""
    window: Admitted | None = g.get("kalah_window") if has_request_context() else None
    if window is None:
        return lambda spent_ms: None
    budget_units = search_cost(budget_ms)
    reserve(budget_units)
    charge(budget_units)
    buckets = _buckets()
    once = threading.Lock()  # held for good by the first call

    def settle(spent_ms: float) -> None:
        if not once.acquire(blocking=False):
            return
        refund = budget_units - search_cost(min(spent_ms, budget_ms))
        if refund > 0:
            buckets.add(window.identity, window.items, -refund)
            buckets.sync()

    return settle


def payer() -> str:
    """Who pays for work the current request leaves to run later (a batch job's searches),
    as text for :meth:`~kalah_service.ratelimit.buckets.Buckets.charge_later`; empty when no
    limit applies to the request."""
    window: Admitted | None = g.get("kalah_window")
    return "" if window is None else window.payer()


def _billed() -> bool:
    """Whether the current request's searches are charged one by one: a limit applies to it
    (it has a window to settle) and it did not prepay."""
    return (
        has_request_context() and g.get("kalah_window") is not None and not g.get("kalah_prepaid")
    )


class RequestMeter:
    """The analyser's meter in the HTTP app (:class:`kalah_service.core.analyser.Meter`): the
    current request's caller pays for the searches it runs. Outside a request (a batch job's runner
    thread) nothing is charged here: the runner charges each chunk to the job's payer
    (:meth:`~kalah_service.ratelimit.buckets.Buckets.charge_later`)."""

    def before_search(self, budget_ms: int) -> None:
        """Reserve the search's budget, unless the request prepaid (a game review) or no
        limit applies to it (nothing would read the bill)."""
        if _billed():
            reserve(search_cost(budget_ms))

    def after_search(self, spent_ms: float) -> None:
        """Charge what the search ran (a prepaid request pays its own time at the end)."""
        if _billed():
            charge_search(spent_ms)

    def prepay(self, budget_ms: int) -> None:
        """Reserve the whole budget of a request that runs many searches (a game review):
        its searches reserve nothing of their own, and it pays the time it took, at most the
        budget, when it ends."""
        if not has_request_context():
            return
        reserve(search_cost(budget_ms))
        g.kalah_prepaid = (time.perf_counter(), budget_ms)


def _retry_after(reset: float) -> str:
    return str(max(1, math.ceil(reset - time.time())))


# -- the hooks -----------------------------------------------------------------------------


def init_rate_limits(
    app: Flask, settings: Settings, auth: Authenticator, counters: Counters
) -> Buckets:
    """Charge every request under ``/v1/`` (after the caller is resolved, see
    :func:`kalah_service.create_app`)."""
    buckets = Buckets(counters)
    app.extensions["kalah_limits"] = buckets
    tiers: dict[str, tuple[RateLimitItem, ...]] = {}

    def items_of(tier: str) -> tuple[RateLimitItem, ...]:
        if tier not in tiers:
            tiers[tier] = tuple(parse_many(settings.tier_limit(tier)))
        return tiers[tier]

    mode = _mode(settings)  # the settings' part, decided once

    @app.before_request
    def admit() -> None:
        if not _charged_path():
            return
        applies = _applies(mode)
        if not applies and "Authorization" not in request.headers:
            return  # an anonymous caller no limit applies to: no one to look up or charge
        try:
            caller = auth.caller()
            unauthorized = None
        except ApiProblem as problem:  # a bad key: its 401 is charged to the IP, like a request
            caller, unauthorized = auth.anonymous(), problem
        if not applies:
            if unauthorized is not None:
                raise unauthorized
            return
        window = Admitted(caller.identity, items_of(caller.tier))
        g.kalah_window = window
        try:
            with _counted():
                refused = buckets.admit(window.identity, window.items, base_cost(request.endpoint))
        except ApiProblem:
            stop_reading()  # refused before its body is read
            raise
        if unauthorized is not None and refused is None:
            raise unauthorized
        if refused is not None:
            stop_reading()  # the body, if any, is not read
            reset, left = buckets.window(window.identity, refused)
            raise _refuse(
                Refusal(refused, max(left, 0), reset),
                f"rate limit {refused} spent; see Retry-After",
            )
        if request.content_length:
            try:
                charge_body(request.content_length)
            except ApiProblem:
                stop_reading()  # refused before its body is read
                raise

    @app.after_request
    def settle(response: Response) -> Response:
        window: Admitted | None = g.get("kalah_window")
        if window is None:
            return response
        prepaid = g.pop("kalah_prepaid", None)
        if prepaid is not None:
            started, budget_ms = prepaid
            charge_search((time.perf_counter() - started) * 1000.0, budget_ms=budget_ms)
        if request.environ.get("kalah.close"):
            g.kalah_body = 0  # a body refused before it was read costs nothing
        status = response.status_code
        if status == 429:
            cost = int(g.get("kalah_body", 0))  # refused: pays only a body it had read
        elif status >= 500:
            cost = 0  # the service failed: nothing is charged
        else:
            cost = request_cost()
        # What was reserved is counted already: add the rest, or refund what was not spent.
        unsettled = cost - int(g.get("kalah_reserved", 0))
        if unsettled:
            buckets.add(window.identity, window.items, unsettled)
        response.headers["Kalah-Cost"] = str(cost)
        refusal: Refusal | None = g.get("kalah_refusal")
        if status == 429 and refusal is not None:
            # The figures the refusal was decided on (and its detail states).
            item, left, reset = refusal.item, refusal.left, refusal.reset
        else:
            reset, left, item = min(
                ((*buckets.window(window.identity, item), item) for item in window.items),
                key=lambda w: w[1],
            )
        response.headers["RateLimit-Limit"] = str(item.amount)
        response.headers["RateLimit-Remaining"] = str(max(0, left))
        response.headers["RateLimit-Reset"] = str(int(reset + 1))
        if status == 429 and "Retry-After" not in response.headers:
            response.headers["Retry-After"] = _retry_after(reset)
        return response

    return buckets
