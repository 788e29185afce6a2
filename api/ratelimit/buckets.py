"""Every caller's buckets as one worker sees them, synced with the shared counters.

Buckets are fixed windows. Each worker counts its callers' charges in memory and a background
thread adds them to the shared :mod:`kalah_service.stores.counters` every :data:`SYNC_S`, reading
back everyone's totals (one round trip for all callers): a cached answer makes no round trip. Why
not flask-limiter's request hooks: they made three Redis round trips per request, most of a cached
answer's time (``benchmarks/load_api.py`` measures it; the figures: HISTORY.md).

A caller spending fast is synced before it is admitted (see :meth:`Buckets.admit`), so another
worker's charges are seen up to ``SYNC_S`` late only while they are small against what is
left. A reservation (:meth:`Buckets.reserve`: a search's budget, a large body, a job) is added
to the shared counters at once and atomically, and taken back if it overdraws a bucket, so
concurrent requests on any worker cannot overdraw a bucket by their reservations.

Counters that fail (Redis down or answering errors, a full disk, a corrupt file) are a fault
of the service, not a reason to stop counting: a limited request is then refused with
:class:`CountersFailing` (a 503 with Retry-After, :mod:`kalah_service.edge.charging`) until the
counters answer again, tried at most every :data:`RETRY_S` (by the next request, the sync thread or
``/readyz``); charges made meanwhile stay pending and are added once they are back. The sync
thread survives any error.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass

from limits import RateLimitItem, parse_many

from ..stores.counters import KEY_PREFIX, Counters
from .costs import search_cost

log = logging.getLogger("kalah_service.ratelimit")

SYNC_S = 0.1
"""How often a worker adds its charges to the counters and reads back every worker's totals."""

RETRY_S = 0.5
"""After a failed sync, how long a worker counts alone before it tries the counters again."""


class CountersFailing(Exception):
    """The shared counters failed and have not answered since: no limited request may run."""


_EXITING = threading.Event()
atexit.register(_EXITING.set)  # sync threads stop, and stay quiet, once the process exits


@dataclass(slots=True)
class _Bucket:
    """One caller's window as this worker sees it."""

    amount: int
    seconds: int
    counted: int = 0  # every worker's charges, as Redis last said
    pending: int = 0  # this worker's charges not yet added to Redis
    reset: float = 0.0  # wall time at which the window ends
    used_at: float = 0.0  # monotonic time of the last admission
    known: bool = False  # whether the shared counters were read since it was made here


@dataclass(frozen=True, slots=True)
class Admitted:
    identity: str
    items: tuple[RateLimitItem, ...]

    def payer(self) -> str:
        """This caller and its limits as text, kept with work that runs after its request (a
        batch job's chunks) and charged by :meth:`Buckets.charge_later`."""
        limits = [f"{i.amount}/{i.multiples} {i.GRANULARITY.name}" for i in self.items]
        return json.dumps({"identity": self.identity, "limits": limits})


class Buckets:
    """Every caller's fixed-window buckets, counted in memory and synced to the shared
    counters (when configured) every :data:`SYNC_S` by a background thread of this process."""

    IDLE_S = 120.0

    def __init__(self, counters: Counters | None) -> None:
        self._counters = counters
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._thread_pid = 0
        self._down_until = 0.0
        self.failure: str | None = None
        """Why the counters last failed (the exception's type), or None while they answer."""
        self.failures = 0
        """How many tries of the counters failed (since this process started)."""

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
            bucket.reset = now + bucket.seconds  # until the counters say when it ends
        return bucket

    def admit(
        self, identity: str, items: tuple[RateLimitItem, ...], units: int
    ) -> RateLimitItem | None:
        """The first limit that cannot pay ``units`` now, or None: the request may run.
        A caller spending fast is synced first: once this worker's unsynced charges reach an
        eighth of what the counters last said was left, so a bucket is overdrawn by at most an
        eighth of its remainder per worker, and near its end every admission is checked in
        the counters."""
        self._start_syncing()
        if self.failure is not None:
            self.sync()  # tries the counters again once the back-off has passed
            self.check()
        with self._lock:
            buckets = [self._bucket(identity, item) for item in items]
            # A bucket new to this worker (its first request here, or a worker respawned) is
            # read from the counters before it admits anything.
            stale = self._counters is not None and any(
                not b.known or b.pending >= max(1, (b.amount - b.counted) // 8) for b in buckets
            )
        if stale:
            self.sync()
            self.check()
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
        first bucket that cannot hold them. With shared counters the check and the addition
        are one atomic step there, so every worker sees the units at once, and never units
        that are then taken back."""
        if self._counters is not None and self.failure is not None:
            self.sync()
            self.check()
        if self._counters is None:
            with self._lock:
                for item in items:
                    bucket = self._bucket(identity, item)
                    if bucket.counted + bucket.pending + units > bucket.amount:
                        return item
                for item in items:
                    self._bucket(identity, item).pending += units
            return None
        with self._lock:  # this worker's unsynced charges count against the limit too
            limits = [
                (
                    self.key(identity, item),
                    item.get_expiry(),
                    item.amount - self._bucket(identity, item).pending,
                )
                for item in items
            ]
        try:
            refused, totals = self._counters.reserve(limits, units)
        except self._counters.errors as error:
            self._failed(error)
            raise CountersFailing(self.failure) from None
        self._recovered()
        now = time.time()
        with self._lock:
            for item, (total, left_s) in zip(items, totals, strict=True):
                bucket = self._bucket(identity, item)
                bucket.counted = total
                bucket.known = True
                if left_s > 0:
                    bucket.reset = now + left_s
        return None if refused is None else items[refused]

    def add(self, identity: str, items: tuple[RateLimitItem, ...], units: int) -> None:
        with self._lock:
            for item in items:
                self._bucket(identity, item).pending += units

    def charge_later(self, payer: str, search_ms: float) -> None:
        """Charge ``payer`` (:meth:`Admitted.payer`; empty: nobody) for ``search_ms`` of search
        run outside its request (a job's chunk, on a batch worker or a server's runner
        thread), synced at once to the shared counters every worker reads."""
        units = search_cost(search_ms)
        if not payer or units <= 0:
            return
        data = json.loads(payer)
        self.add(data["identity"], tuple(parse_many(";".join(data["limits"]))), units)
        self.sync()

    def window(self, identity: str, item: RateLimitItem) -> tuple[float, int]:
        """(reset time, units left) of the caller's bucket for ``item``."""
        with self._lock:
            bucket = self._bucket(identity, item)
            return bucket.reset, bucket.amount - bucket.counted - bucket.pending

    def _start_syncing(self) -> None:
        # After a fork (gunicorn's preloaded app) the parent's thread does not exist here.
        if self._counters is None or self._thread_pid == os.getpid():
            return
        with self._sync_lock:
            if self._thread_pid != os.getpid():
                self._thread_pid = os.getpid()
                threading.Thread(
                    target=_sync_forever, args=(weakref.ref(self),), name="rl-sync", daemon=True
                ).start()

    def check(self) -> None:
        """Raise :class:`CountersFailing` while the counters are failing."""
        failure = self.failure
        if failure is not None:
            raise CountersFailing(failure)

    def _failed(self, error: BaseException) -> None:
        if self.failure is None and not _EXITING.is_set():
            log.warning(
                "rate limits: the counters failed (%s: %s): limited requests are refused "
                "(503) until they answer again",
                type(error).__name__,
                error,
            )
        self.failure = type(error).__name__
        self.failures += 1
        self._down_until = time.monotonic() + RETRY_S

    def _recovered(self) -> None:
        if self.failure is not None:
            log.warning("rate limits: the counters answer again")
            self.failure = None
            self._down_until = 0.0

    def probe(self) -> str | None:
        """Write to the counters now (``/readyz``): None when that worked, else why not."""
        if self._counters is None:
            return None
        with self._sync_lock:
            try:
                self._counters.probe()
            except self._counters.errors as error:
                self._failed(error)
                return self.failure
            self._recovered()
        return None

    def sync(self) -> None:
        """Add this worker's pending charges to the counters and read back every total;
        while they are failing, try them again once the back-off has passed."""
        if self._counters is None or time.monotonic() < self._down_until:
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
            try:
                if not sent:
                    if self.failure is not None:  # nothing to add: is it back?
                        self._counters.probe()
                        self._recovered()
                    return
                totals = self._counters.add(
                    [(key, units, bucket.seconds) for key, bucket, units in sent]
                )
            except self._counters.errors as error:
                with self._lock:
                    for _, bucket, units in sent:
                        bucket.pending += units
                self._failed(error)
                return
            self._recovered()
            now = time.time()
            with self._lock:
                for (_, bucket, _units), (total, left_s) in zip(sent, totals, strict=True):
                    bucket.counted = total
                    bucket.known = True
                    if left_s > 0:
                        bucket.reset = now + left_s


def _sync_forever(ref: weakref.ref[Buckets]) -> None:
    """A worker's sync thread; it ends with its :class:`Buckets` (an app that is gone)."""
    while not _EXITING.wait(SYNC_S):
        buckets = ref()
        if buckets is None:
            return
        try:
            buckets.sync()
        except Exception:  # a bug, not the counters' (those are caught): the thread goes on
            log.exception("rate limits: syncing the counters failed")
        del buckets
