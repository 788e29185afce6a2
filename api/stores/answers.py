"""The answer store: finished analyses, keyed by everything that determines them, and the
one single-flight that makes concurrent requests for one uncached key compute it once.

A key is the engine version and the request's key (rules, compact position, effective
limits: :attr:`kalah_service.core.request.AnalysisRequest.key`; :meth:`Keys.of`). An exact result
does not depend on the limits, so it is stored under the limits ``exact`` without expiry and
answers a request with any limits; a heuristic result is stored under its limits with a TTL
and is replaced only by a deeper one.

:class:`AnswerStore` is the interface of both backends (:mod:`.embedded_answers`: SQLite on the
local disk, shared by every process of the machine; :mod:`.redis_answers`: Redis, shared by every
worker and replica). Each has a small in-process LRU of exact results in front (immutable, so
never stale) and gives four lock primitives (take, read, renew, release a key's lock); on
them :meth:`AnswerStore.compute_once` runs the single-flight, written once: the first request
takes the key's lock and computes, the others poll for its answer (up to the search budget
plus a margin); the lock names its holder and has a short renewed lease, so a dead holder's
lock is taken over at once or lapses within :data:`~kalah_service.stores.lease.LEASE_S`
(:mod:`kalah_service.stores.lease`). A store that fails (Redis down, SQLite locked too long) is a
miss: the request is computed and answered.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..base import metrics
from .lease import LEASE_S, holder_dead, owner_token, renewing

log = logging.getLogger(__name__)

PREFIX = "kalah:v1"

WAIT_MARGIN_S = 0.25
"""Beyond the wait it was given, how long a request polls before it computes itself."""


@dataclass(frozen=True, slots=True)
class Entry:
    """A cached answer: its JSON body (without the ``cached`` flag) and what replacing it needs."""

    body: bytes
    exact: bool
    depth: int | None

    def encode(self) -> bytes:
        head = b"E" if self.exact else b"H%d" % (self.depth or 0)
        return head + b"|" + self.body

    @classmethod
    def decode(cls, raw: bytes) -> Entry:
        head, _, body = raw.partition(b"|")
        if head == b"E":
            return cls(body, True, None)
        return cls(body, False, int(head[1:] or 0))


@dataclass(frozen=True, slots=True)
class Keys:
    """Where one request's answer lives: proven (any limits), for its limits, and its lock."""

    exact: str
    limits: str
    lock: str

    @classmethod
    def of(cls, engine_version: str, key: str, exact_key: str, knowledge: str = "") -> Keys:
        """The keys of a request whose answer for its limits is keyed ``key`` and whose proven
        answer ``exact_key`` (:attr:`kalah_service.core.request.AnalysisRequest.key` and
        ``exact_key``). ``knowledge`` names what can turn an inexact answer into an exact one
        (the book, the database attached): it keys the answers for limits, not the proven
        ones, which no book or database changes."""
        base = f"{PREFIX}:{engine_version}:"
        limits = f"{base}{knowledge}:{key}" if knowledge else f"{base}{key}"
        return cls(f"{base}{exact_key}:exact", limits, f"{limits}:lock")


class AnswerStore:
    """The interface of the answer stores, and the single-flight over their lock primitives."""

    backend = "none"

    errors: tuple[type[BaseException], ...] = ()
    """What the backend raises when it fails: a miss, never an error of the request."""

    # -- entries ---------------------------------------------------------------------------

    def get(self, keys: Keys) -> Entry | None:
        return self.lookup(keys)[0]

    def lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        """The entry, if any, and the level that answered (``memory`` or the backend's)."""
        raise NotImplementedError

    def put(self, keys: Keys, entry: Entry) -> None:
        raise NotImplementedError

    def ping(self) -> tuple[bool, str]:
        raise NotImplementedError

    def size(self) -> int | None:
        return None

    # -- the lock primitives of the single-flight ------------------------------------------

    def available(self) -> bool:
        """Whether to use the backend now (not in a back-off after a failure)."""
        return True

    def failed(self, error: BaseException) -> None:
        """The backend raised ``error`` (one of :attr:`errors`)."""
        log.warning("answer store %s failed: %s", self.backend, error)

    def take_lock(self, lock: str, token: str, lease_s: float) -> bool:
        """Take ``lock`` for ``token`` for ``lease_s`` if nobody holds it."""
        raise NotImplementedError

    def lock_holder(self, lock: str) -> bytes | str | None:
        raise NotImplementedError

    def renew_lock(self, lock: str, token: str, lease_s: float) -> None:
        """Extend the lease of ``lock`` if ``token`` still holds it."""
        raise NotImplementedError

    def release_lock(self, lock: str, token: bytes | str) -> None:
        """Remove ``lock`` if ``token`` holds it."""
        raise NotImplementedError

    # -- compute once ----------------------------------------------------------------------

    def compute_once(
        self, keys: Keys, compute: Callable[[], Entry], wait_s: float
    ) -> tuple[Entry, bool]:
        """The cached entry (``True``) or a freshly computed and stored one (``False``)."""
        entry, level = self.lookup(keys)
        if entry is not None:
            metrics.CACHE.labels(level, "hit").inc()
            return entry, True
        metrics.CACHE.labels(self.backend, "miss").inc()
        with self._single_flight(keys, wait_s) as cached:
            if cached is not None:
                return cached, True
            entry = compute()
            self.put(keys, entry)
            return entry, False

    @contextmanager
    def _single_flight(self, keys: Keys, wait_s: float) -> Iterator[Entry | None]:
        """Yields the entry another request computed meanwhile, or None: compute it (as the
        lock's holder, or after waiting too long, or with the backend failing)."""
        token = owner_token()
        deadline = time.monotonic() + wait_s + WAIT_MARGIN_S
        pause = 0.002
        holder = False
        found: Entry | None = None
        while self.available():
            try:
                if self.take_lock(keys.lock, token, LEASE_S):  # renewed while we compute
                    holder = True
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
                found = self.get(keys)
                if found is not None or time.monotonic() > deadline:
                    break  # answered; or the holder is too slow: compute ourselves
                held_by = self.lock_holder(keys.lock)
                if held_by is not None and holder_dead(held_by):  # killed here: take over
                    self.release_lock(keys.lock, held_by)
            except self.errors as error:
                self.failed(error)
                break
        if found is not None:
            metrics.CACHE_WAITS.inc()
            yield found
            return
        if not holder:
            yield None
            return
        try:
            with renewing(lambda: self.renew_lock(keys.lock, token, LEASE_S), keys.lock):
                yield self.get(keys)  # stored between our miss and the lock?
        finally:
            try:
                self.release_lock(keys.lock, token)
            except self.errors as error:
                self.failed(error)


class Lru:
    """A bounded, thread-safe LRU of entries with optional expiry."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[Entry, float | None]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Entry | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            entry, expires = item
            if expires is not None and expires <= time.monotonic():
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return entry

    def put(self, key: str, entry: Entry, ttl_s: float | None) -> None:
        with self._lock:
            old = self._items.get(key)
            if old is not None and _keeps(old, entry):
                return
            self._items[key] = (entry, None if ttl_s is None else time.monotonic() + ttl_s)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _keeps(old: tuple[Entry, float | None], new: Entry) -> bool:
    """Whether a live heuristic entry stays: it is replaced only by a deeper (or exact) one."""
    entry, expires = old
    if new.exact or entry.exact or expires is None or expires <= time.monotonic():
        return False
    return (entry.depth or 0) > (new.depth or 0)
