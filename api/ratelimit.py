"""Rate limits charged by cost, one bucket per caller shared by every endpoint.

The caller is its API key, or its IP address when it sends none (:mod:`api.keys`); its tier
sets the bucket's size (``KALAH_LIMIT_<TIER>``, e.g. ``120/minute`` units, the syntax of the
``limits`` library, which parses it). Every request under ``/v1/`` costs, in units:

- its endpoint's base cost: :data:`ROUTE_COSTS`, 1 for an endpoint not listed;
- plus 1 per started :data:`SEARCH_UNIT_MS` of search the request ran (:func:`charge_search`):
  a cached answer runs none, an uncached one at the default 1 s budget costs up to 11;
- plus whatever the view charges with :func:`charge`; a batch run as a job calls
  :func:`charge_batch`: a key is required (with Redis), every started :data:`ITEMS_PER_UNIT`
  items cost 1 unit up front, and the bucket must hold the first chunk's search budget; its
  searches are charged as they run, the CPU each chunk actually spent, to the caller's bucket
  (:func:`charge_later`, by the worker that ran it). A job is bounded by concurrency, not
  by a budget reserved up front: its chunks wait in the fair queue and take one worker at a
  time per caller in turn (see :mod:`api.batch.redis_store`). A batch answered inline pays
  for the search it ran, like single analyses.

A request is admitted while its bucket holds its base cost. A search reserves its budget's
cost before it runs (:func:`reserve`: added to the bucket in Redis at once, atomically, and
taken back if that overdraws it), and the unspent part is refunded when the answer is sent,
so concurrent requests cannot overdraw a bucket by their searches, only by base costs. Buckets
are fixed windows counted in the state store (:mod:`api.state`, shared by every worker and
replica), in process memory without one.

Why not flask-limiter's request hooks: they made three Redis round trips and about 0.75 ms of
a cached answer's 1.15 ms (load_api (a): 3,019 req/s without them, 974 with them). Here each
worker counts its callers' charges in memory and a background thread adds them to Redis every
:data:`SYNC_S`, reading back everyone's totals (one pipelined round trip for all callers): a
cached answer makes no round trip. A caller spending fast is synced before it is admitted
(see :meth:`Buckets.admit`), so another worker's charges are seen up to ``SYNC_S`` late only
while they are small against what is left. An unreachable Redis leaves each worker counting
alone until it is back.

Answers carry ``RateLimit-Limit``, ``RateLimit-Remaining``, ``RateLimit-Reset`` (Unix time) and
``Kalah-Cost``; a spent bucket is a 429 problem with ``Retry-After``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
from apispec import APISpec, BasePlugin
from flask import Flask, Response, current_app, g, has_request_context, request
from limits import RateLimitItem, parse_many

from .config import Settings
from .errors import ApiProblem
from .keys import Authenticator

log = logging.getLogger(__name__)

ROUTE_COSTS: Mapping[str, int] = {}
"""Base cost of an endpoint (Flask endpoint name, e.g. ``"batch.Batch"``), 1 when absent."""

SEARCH_UNIT_MS = 100
"""A request is charged one more unit per started this many milliseconds of search."""

ITEMS_PER_UNIT = 100
"""A batch run as a job is charged one unit per started this many items when it is posted
(parsing and storing them); its searches are charged as they run (:func:`charge_later`)."""

LIMITED_PREFIX = "/v1/"
"""Paths that are charged; health, metrics, the spec and the docs are free."""

KEY_PREFIX = "kalah:rl"

SYNC_S = 0.1
"""How often a worker adds its charges to Redis and reads back every worker's totals."""

RETRY_S = 0.5
"""After a failed sync, how long a worker counts alone before it tries Redis again."""

_EXITING = threading.Event()
atexit.register(_EXITING.set)  # sync threads stop, and stay quiet, once the process exits


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
    worker and replica sees it (Redis, atomically), and what the request does not spend is
    refunded when it ends, so concurrent requests cannot overdraw a bucket by their budgets
    (only by their base costs, which are counted lazily)."""
    window: _Admitted | None = g.get("kalah_window")
    if window is None or units <= 0:
        return
    if "kalah_reserved" not in g:  # the first reservation holds the request's base cost too
        units += base_cost()
    buckets: Buckets = current_app.extensions["kalah_limits"]
    refused = buckets.reserve(window.identity, window.items, units)
    if refused is not None:
        reset, left = buckets.window(window.identity, refused)
        raise ApiProblem(
            "rate-limited",
            f"this request may cost {int(g.get('kalah_reserved', 0)) + units} units and only "
            f"{max(left, 0)} of {refused.amount} are left until the window resets",
            field=None,
            headers={"Retry-After": _retry_after(reset)},
        )
    g.kalah_reserved = int(g.get("kalah_reserved", 0)) + units


def prepay_search(budget_ms: float) -> None:
    """Reserve the whole search budget of a request that runs many searches (a game review):
    its searches then reserve nothing of their own (see :func:`reserve_search`)."""
    reserve(search_cost(budget_ms))
    g.kalah_prepaid = True


def reserve_search(budget_ms: float) -> None:
    """The analyser's hook before it searches (a cache miss): reserve the search's budget,
    unless the request prepaid, or there is no request (a batch worker, the CLI)."""
    if has_request_context() and not g.get("kalah_prepaid"):
        reserve(search_cost(budget_ms))


def search_cost(time_ms: float) -> int:
    """Units for a search of ``time_ms`` milliseconds."""
    return math.ceil(time_ms / SEARCH_UNIT_MS) if time_ms > 0 else 0


def charge_batch(items: int, first_units: int, *, need_key: bool = True) -> None:
    """The hook of an endpoint that queues analyses for background workers: it needs an API
    key when ``need_key`` (a 401 problem without one) and costs 1 unit per started
    :data:`ITEMS_PER_UNIT` items (bad ones included), paid up front; the bucket must also hold
    ``first_units`` (the cost of the first chunk's searches, a 429 problem otherwise), which
    are not charged here: the searches are charged as they run (:func:`payer`,
    :func:`charge_later`)."""
    from .keys import require_key

    if need_key:
        require_key()
    units = math.ceil(items / ITEMS_PER_UNIT)
    ensure_budget(request_cost() + units + first_units)
    reserve(units)
    charge(units)


def payer() -> str:
    """Who pays for work the current request leaves to run later (a batch job's searches):
    the caller's identity and limits as text, for :func:`charge_later`; empty when no limit
    applies to the request."""
    window: _Admitted | None = g.get("kalah_window")
    if window is None:
        return ""
    limits = [f"{i.amount}/{i.multiples} {i.GRANULARITY.name}" for i in window.items]
    return json.dumps({"identity": window.identity, "limits": limits})


def charge_later(buckets: Buckets, payer_text: str, search_ms: float) -> None:
    """Charge ``payer_text`` (from :func:`payer`) for ``search_ms`` of search run outside its
    request (a job's chunk, on a batch worker or a server's runner thread), in ``buckets``
    (synced at once where every worker sees it, with a state store)."""
    units = search_cost(search_ms)
    if not payer_text or units <= 0:
        return
    data = json.loads(payer_text)
    items = tuple(parse_many(";".join(data["limits"])))
    buckets.add(data["identity"], items, units)
    buckets.sync()


def ensure_budget(units: int) -> None:
    """A 429 problem unless every bucket of the current request holds ``units`` (after a
    sync with Redis: an up-front charge is large, so it is checked against fresh totals)."""
    buckets: Buckets = current_app.extensions["kalah_limits"]
    window = g.get("kalah_window")
    if window is None:
        return
    buckets.sync()
    for item in window.items:
        reset, left = buckets.window(window.identity, item)
        if left < units:
            raise ApiProblem(
                "rate-limited",
                f"this request costs {units} units and only {max(left, 0)} of "
                f"{item.amount} are left until the window resets",
                field=None,
                headers={"Retry-After": _retry_after(reset)},
            )


def _retry_after(reset: float) -> str:
    return str(max(1, math.ceil(reset - time.time())))


@dataclass(slots=True)
class _Bucket:
    """One caller's window as this worker sees it."""

    amount: int
    seconds: int
    counted: int = 0  # every worker's charges, as Redis last said
    pending: int = 0  # this worker's charges not yet added to Redis
    reset: float = 0.0  # wall time at which the window ends
    used_at: float = 0.0  # monotonic time of the last admission


@dataclass(frozen=True, slots=True)
class _Admitted:
    identity: str
    items: tuple[RateLimitItem, ...]


class Buckets:
    """Every caller's fixed-window buckets, counted in memory and synced to Redis (when
    configured) every :data:`SYNC_S` by a background thread of this process."""

    IDLE_S = 120.0

    def __init__(self, redis_url: str | None, *, timeout_s: float) -> None:
        self._redis = (
            redis.Redis.from_url(
                redis_url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
            )
            if redis_url
            else None
        )
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._thread_pid = 0
        self._down_until = 0.0

    @staticmethod
    def key(identity: str, item: RateLimitItem) -> str:
        return f"{KEY_PREFIX}:{identity}:{item.amount}/{item.get_expiry()}"

    def _bucket(self, identity: str, item: RateLimitItem) -> _Bucket:
        """The caller's bucket, rolled over when its window has ended (call under the lock)."""
        key = self.key(identity, item)
        bucket = self._buckets.get(key)
        now = time.time()
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(item.amount, item.get_expiry())
        if now >= bucket.reset:
            bucket.counted = bucket.pending = 0
            bucket.reset = now + bucket.seconds  # until Redis says when its window ends
        return bucket

    def admit(
        self, identity: str, items: tuple[RateLimitItem, ...], units: int
    ) -> RateLimitItem | None:
        """The first limit that cannot pay ``units`` now, or None: the request may run.
        A caller spending fast is synced first: once this worker's unsynced charges reach an
        eighth of what Redis last said was left, so a bucket is overdrawn by at most an eighth
        of its remainder per worker, and near its end every admission is checked in Redis."""
        self._start_syncing()
        with self._lock:
            buckets = [self._bucket(identity, item) for item in items]
            stale = any(b.pending >= max(1, (b.amount - b.counted) // 8) for b in buckets)
        if stale:
            self.sync()
        with self._lock:
            for item in items:
                bucket = self._bucket(identity, item)
                bucket.used_at = time.monotonic()
                if bucket.counted + bucket.pending + units > bucket.amount:
                    return item
        return None

    def reserve(
        self, identity: str, items: tuple[RateLimitItem, ...], units: int
    ) -> RateLimitItem | None:
        """Take ``units`` from every bucket of the caller at once, or none and return the
        first bucket that cannot hold them. With Redis the units are added there atomically
        (taken back if a bucket overflows), so every worker sees them at once."""
        if self._redis is None or time.monotonic() < self._down_until:
            with self._lock:
                for item in items:
                    bucket = self._bucket(identity, item)
                    if bucket.counted + bucket.pending + units > bucket.amount:
                        return item
                for item in items:
                    self._bucket(identity, item).pending += units
            return None
        keys = [(self.key(identity, item), item) for item in items]
        pipe = self._redis.pipeline(transaction=False)
        for key, item in keys:
            pipe.set(key, 0, ex=item.get_expiry(), nx=True)
            pipe.incrby(key, units)
            pipe.pttl(key)
        try:
            replies = pipe.execute()
        except redis.RedisError as error:
            log.warning("rate limits: Redis unreachable, counting per worker: %s", error)
            self._down_until = time.monotonic() + RETRY_S
            return self.reserve(identity, items, units)
        now = time.time()
        refused: RateLimitItem | None = None
        with self._lock:
            for i, (_, item) in enumerate(keys):
                total, pttl = int(replies[3 * i + 1]), int(replies[3 * i + 2])
                bucket = self._bucket(identity, item)
                bucket.counted = total
                if pttl > 0:
                    bucket.reset = now + pttl / 1000.0
                if refused is None and total + bucket.pending > item.amount:
                    refused = item
        if refused is not None:
            self._take_back(keys, units)
        return refused

    def _take_back(self, keys: list[tuple[str, RateLimitItem]], units: int) -> None:
        assert self._redis is not None
        pipe = self._redis.pipeline(transaction=False)
        for key, _ in keys:
            pipe.decrby(key, units)
        # On failure the units stay counted: the caller is refused, never favoured.
        with contextlib.suppress(redis.RedisError):
            pipe.execute()
        with self._lock:
            for key, _ in keys:
                bucket = self._buckets.get(key)
                if bucket is not None:
                    bucket.counted -= units

    def add(self, identity: str, items: tuple[RateLimitItem, ...], units: int) -> None:
        with self._lock:
            for item in items:
                self._bucket(identity, item).pending += units

    def window(self, identity: str, item: RateLimitItem) -> tuple[float, int]:
        """(reset time, units left) of the caller's bucket for ``item``."""
        with self._lock:
            bucket = self._bucket(identity, item)
            return bucket.reset, bucket.amount - bucket.counted - bucket.pending

    def _start_syncing(self) -> None:
        # After a fork (gunicorn's preloaded app) the parent's thread does not exist here.
        if self._redis is None or self._thread_pid == os.getpid():
            return
        with self._sync_lock:
            if self._thread_pid != os.getpid():
                self._thread_pid = os.getpid()
                threading.Thread(
                    target=_sync_forever, args=(weakref.ref(self),), name="rl-sync", daemon=True
                ).start()

    def sync(self) -> None:
        """Add this worker's pending charges to Redis and read back every bucket's total."""
        if self._redis is None or time.monotonic() < self._down_until:
            return
        with self._sync_lock:
            with self._lock:
                idle = time.monotonic() - self.IDLE_S
                for key in [
                    k for k, b in self._buckets.items() if b.used_at < idle and not b.pending
                ]:
                    del self._buckets[key]
                sent = [(key, bucket, bucket.pending) for key, bucket in self._buckets.items()]
                for _, bucket, units in sent:
                    bucket.pending -= units
            if not sent:
                return
            pipe = self._redis.pipeline(transaction=False)
            for key, bucket, units in sent:
                pipe.set(key, 0, ex=bucket.seconds, nx=True)
                pipe.incrby(key, units)
                pipe.pttl(key)
            try:
                replies = pipe.execute()
            except redis.RedisError as error:
                with self._lock:
                    for _, bucket, units in sent:
                        bucket.pending += units
                if self._down_until == 0.0 and not _EXITING.is_set():
                    log.warning("rate limits: Redis unreachable, counting per worker: %s", error)
                self._down_until = time.monotonic() + RETRY_S
                return
            if self._down_until:
                log.warning("rate limits: Redis reachable again")
                self._down_until = 0.0
            now = time.time()
            with self._lock:
                for i, (_, bucket, _units) in enumerate(sent):
                    total, pttl = int(replies[3 * i + 1]), int(replies[3 * i + 2])
                    bucket.counted = total
                    if pttl > 0:
                        bucket.reset = now + pttl / 1000.0


def _sync_forever(ref: weakref.ref[Buckets]) -> None:
    """A worker's sync thread; it ends with its :class:`Buckets` (an app that is gone)."""
    while not _EXITING.wait(SYNC_S):
        buckets = ref()
        if buckets is None:
            return
        buckets.sync()
        del buckets


def init_rate_limits(app: Flask, settings: Settings, auth: Authenticator) -> Buckets:
    """Charge every request under ``/v1/`` (after the caller is resolved, see
    :func:`api.create_app`)."""
    buckets = Buckets(settings.state_url, timeout_s=settings.redis_timeout_s)
    app.extensions["kalah_limits"] = buckets
    tiers: dict[str, tuple[RateLimitItem, ...]] = {}

    def items_of(tier: str) -> tuple[RateLimitItem, ...]:
        if tier not in tiers:
            tiers[tier] = tuple(parse_many(settings.tier_limit(tier)))
        return tiers[tier]

    @app.before_request
    def admit() -> None:
        if not _limited():
            return
        try:
            caller = auth.caller()
            unauthorized = None
        except ApiProblem as problem:  # a bad key: its 401 is charged to the IP, like a request
            caller, unauthorized = auth.anonymous(), problem
        window = _Admitted(caller.identity, items_of(caller.tier))
        g.kalah_window = window
        refused = buckets.admit(window.identity, window.items, base_cost())
        if unauthorized is not None and refused is None:
            raise unauthorized
        if refused is not None:
            reset, _ = buckets.window(window.identity, refused)
            raise ApiProblem(
                "rate-limited",
                f"rate limit {refused} spent; see Retry-After",
                field=None,
                headers={"Retry-After": _retry_after(reset)},
            )

    @app.after_request
    def deduct(response: Response) -> Response:
        window: _Admitted | None = g.get("kalah_window")
        if window is None:
            return response
        # Refused requests are not charged, nor those the service could not serve (503).
        refused = response.status_code in (429, 503)
        cost = 0 if refused else request_cost()
        # What was reserved is counted already: add the rest, or refund what was not spent.
        unsettled = cost - int(g.get("kalah_reserved", 0))
        if unsettled:
            buckets.add(window.identity, window.items, unsettled)
        response.headers["Kalah-Cost"] = str(cost)
        shown = min(
            ((*buckets.window(window.identity, item), item) for item in window.items),
            key=lambda w: w[1],
        )
        reset, left, item = shown
        response.headers["RateLimit-Limit"] = str(item.amount)
        response.headers["RateLimit-Remaining"] = str(max(0, left))
        response.headers["RateLimit-Reset"] = str(int(reset + 1))
        if response.status_code == 429 and "Retry-After" not in response.headers:
            response.headers["Retry-After"] = _retry_after(reset)
        return response

    return buckets


COSTS_DOC = f"""\
**Rate limits.** Every `/v1/` request is charged in cost units against its caller's bucket:
the API key of `Authorization: Bearer <key>`, or the client IP without one (the `anonymous`
tier). A request costs 1 unit, plus 1 per started {SEARCH_UNIT_MS} ms of search it ran (a
cached answer runs none; an uncached one at the default 1 s budget costs up to 11), reserved
before the search runs (429 if the bucket cannot hold the budget's cost; the unspent part is
refunded); a batch run as a job needs an API key, costs 1 unit per started {ITEMS_PER_UNIT}
items when posted (the bucket must also hold its first chunk's search budget), and then the
search its chunks actually ran, charged as each chunk finishes. Answers carry
`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
(Unix time of the window's end) and `Kalah-Cost` (what this request cost); a spent bucket is a
429 problem with `Retry-After`. An unknown or revoked key is a 401 problem, charged 1 unit to
the client's IP. Each tier's size is
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
            if "requestBody" in operation:
                responses.setdefault(
                    "415",
                    {"description": "A body that is not JSON.", "content": problem},
                )
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
