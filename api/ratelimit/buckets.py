"""Every caller's buckets as one worker sees them, synced with the shared counters.

Buckets are fixed windows. Each worker counts its callers' charges in memory and a background
thread adds them to the shared :mod:`.counters` every :data:`SYNC_S`, reading back everyone's
totals (one round trip for all callers): a cached answer makes no round trip. Why not
flask-limiter's request hooks: they made three Redis round trips per request, most of a cached
answer's time (``benchmarks/load_api.py`` measures it; the figures: HISTORY.md).

A caller spending fast is synced before it is admitted (see :meth:`Buckets.admit`), so another
worker's charges are seen up to ``SYNC_S`` late only while they are small against what is
left. A reservation (:meth:`Buckets.reserve`: a search's budget, a large body, a job) is added
to the shared counters at once and atomically, and taken back if it overdraws a bucket, so
concurrent requests on any worker cannot overdraw a bucket by their reservations. Counters
that cannot be reached leave each worker counting alone until they are back.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass

from limits import RateLimitItem

from .counters import KEY_PREFIX, Counters

log = logging.getLogger("kalah_service.ratelimit")

SYNC_S = 0.1
"""How often a worker adds its charges to the counters and reads back every worker's totals."""

RETRY_S = 0.5
"""After a failed sync, how long a worker counts alone before it tries the counters again."""

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
        with self._lock:
            buckets = [self._bucket(identity, item) for item in items]
            # A bucket new to this worker (its first request here, or a worker respawned) is
            # read from the counters before it admits anything.
            stale = self._counters is not None and any(
                not b.known or b.pending >= max(1, (b.amount - b.counted) // 8) for b in buckets
            )
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
        first bucket that cannot hold them. With shared counters the check and the addition
        are one atomic step there, so every worker sees the units at once, and never units
        that are then taken back."""
        if self._counters is None or time.monotonic() < self._down_until:
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
            log.warning("rate limits: the counters are unreachable, counting per worker: %s", error)
            self._down_until = time.monotonic() + RETRY_S
            return self.reserve(identity, items, units)
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

    def sync(self) -> None:
        """Add this worker's pending charges to the counters and read back every total."""
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
            if not sent:
                return
            try:
                totals = self._counters.add(
                    [(key, units, bucket.seconds) for key, bucket, units in sent]
                )
            except self._counters.errors as error:
                with self._lock:
                    for _, bucket, units in sent:
                        bucket.pending += units
                if self._down_until == 0.0 and not _EXITING.is_set():
                    log.warning("rate limits: counters unreachable, counting per worker: %s", error)
                self._down_until = time.monotonic() + RETRY_S
                return
            if self._down_until:
                log.warning("rate limits: counters reachable again")
                self._down_until = 0.0
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
        buckets.sync()
        del buckets
