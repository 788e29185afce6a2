"""The answer cache: finished analyses, keyed by everything that determines them.

A key is the engine version and the request's key (rules, compact position, effective
limits: :attr:`api.analysis.request.AnalysisRequest.key`; :meth:`Keys.of`). An exact result
does not depend on the limits, so it is stored under the limits ``exact`` without expiry and
answers a request with any limits; a heuristic result is stored under its limits with a TTL
and is replaced only by a deeper one.

Two backends share :meth:`AnswerCache.compute_once`, which makes concurrent requests for one
uncached key compute once:

- :class:`MemoryCache`, a bounded in-process LRU: the embedded default when no Redis URL is
  configured (one process computes a key once; gunicorn workers do not share it).
- :class:`RedisCache`: Redis shared by every worker and replica, with a lock per key
  (``SET NX PX``; others wait and read; a dead holder's lock is taken over at once, or lapses
  within a short renewed lease: :mod:`api.lease`), in front of it a
  small in-process LRU of exact results (immutable, so never stale). Every Redis failure is
  a miss: the request is computed and answered, Redis is skipped for a short back-off, then
  tried again on the next request or health check; there is no permanent failure state.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from . import metrics
from .lease import LEASE_S, holder_dead, owner_token, renewing

if TYPE_CHECKING:
    from .analysis.request import AnalysisRequest
    from .config import Settings

log = logging.getLogger("api.cache")

PREFIX = "kalah:v1"


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
    def of(cls, engine_version: str, request: AnalysisRequest, knowledge: str = "") -> Keys:
        """``knowledge`` names what can turn an inexact answer into an exact one (the book,
        the database attached): it keys the answers for limits, not the proven ones, which
        no book or database changes."""
        base = f"{PREFIX}:{engine_version}:"
        limits = f"{base}{knowledge}:{request.key}" if knowledge else f"{base}{request.key}"
        return cls(f"{base}{request.exact_key}:exact", limits, f"{limits}:lock")


class AnswerCache:
    """What both backends provide; see the module docstring."""

    backend = "none"

    def get(self, keys: Keys) -> Entry | None:
        return self.lookup(keys)[0]

    def lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        """The entry, if any, and the level that answered (``memory`` or ``redis``)."""
        raise NotImplementedError

    def put(self, keys: Keys, entry: Entry) -> None:
        raise NotImplementedError

    def ping(self) -> tuple[bool, str]:
        raise NotImplementedError

    def size(self) -> int | None:
        return None

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
        yield None


class _Lru:
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


class MemoryCache(AnswerCache):
    """The in-process LRU; concurrent requests in one process for one key compute once."""

    backend = "memory"

    def __init__(self, size: int, ttl_s: float) -> None:
        self._lru = _Lru(size)
        self.ttl_s = ttl_s
        self._flights: dict[str, threading.Lock] = {}
        self._flights_lock = threading.Lock()

    def lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        return (self._lru.get(keys.exact) or self._lru.get(keys.limits)), "memory"

    def put(self, keys: Keys, entry: Entry) -> None:
        if entry.exact:
            self._lru.put(keys.exact, entry, None)
        else:
            self._lru.put(keys.limits, entry, self.ttl_s)

    def ping(self) -> tuple[bool, str]:
        return True, f"in-process LRU, {len(self._lru)}/{self._lru.size} entries"

    def size(self) -> int | None:
        return len(self._lru)

    @contextmanager
    def _single_flight(self, keys: Keys, wait_s: float) -> Iterator[Entry | None]:
        with self._flights_lock:
            lock = self._flights.setdefault(keys.lock, threading.Lock())
        acquired = lock.acquire(timeout=wait_s)
        try:
            entry = self.get(keys) if acquired else None
            yield entry  # None: compute (as the holder, or after waiting too long)
        finally:
            if acquired:
                lock.release()
                with self._flights_lock:
                    if self._flights.get(keys.lock) is lock and not lock.locked():
                        del self._flights[keys.lock]


# Replace a heuristic entry only if it is missing or shallower; KEYS[1] key, ARGV value, depth, ttl.
_PUT_HEURISTIC = """
local old = redis.call('GET', KEYS[1])
if old then
  local depth = string.match(old, '^H(%d+)|')
  if depth and tonumber(depth) > tonumber(ARGV[2]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
return 1
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


class RedisCache(AnswerCache):
    """Redis shared by all workers, with an in-process LRU of exact entries in front."""

    backend = "redis"

    BACKOFF_S = 0.5
    """After a Redis failure, requests skip Redis this long (a health check always tries)."""

    def __init__(
        self, url: str, *, ttl_s: float, lru_size: int, timeout_s: float, max_connections: int
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self._redis_errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.url = url
        self.ttl_s = ttl_s
        self._memory = _Lru(lru_size)
        pool = redis.ConnectionPool.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            max_connections=max_connections,
            health_check_interval=30,
            retry=Retry(NoBackoff(), 0),  # never retry inside a request: a failure is a miss
        )
        self.client = redis.Redis(connection_pool=pool, retry=Retry(NoBackoff(), 0))
        self._put_heuristic = self.client.register_script(_PUT_HEURISTIC)
        self._release = self.client.register_script(_RELEASE)
        self._renew = self.client.register_script(_RENEW)
        self._down_until = 0.0
        self._last_error = ""
        self._healthy = True

    # -- failure handling ------------------------------------------------------------------

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, error: BaseException) -> None:
        if self._healthy:
            log.warning("redis unavailable (%s): answering without the shared cache", error)
            self._healthy = False
        self._down_until = time.monotonic() + self.BACKOFF_S
        self._last_error = f"{type(error).__name__}: {error}"
        metrics.REDIS_ERRORS.inc()

    def _recovered(self) -> None:
        if not self._healthy:
            log.warning("redis reachable again: shared cache in use")
            self._healthy = True

    # -- the AnswerCache API -------------------------------------------------------------------

    def lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        entry = self._memory.get(keys.exact)
        if entry is not None:
            return entry, "memory"
        if not self._available():
            return None, "redis"
        try:
            exact, limited = cast(list[bytes | None], self.client.mget(keys.exact, keys.limits))
        except self._redis_errors as error:
            self._failed(error)
            return None, "redis"
        self._recovered()
        if exact is not None:
            entry = Entry.decode(exact)
            self._memory.put(keys.exact, entry, None)
            return entry, "redis"
        return (Entry.decode(limited) if limited is not None else None), "redis"

    def put(self, keys: Keys, entry: Entry) -> None:
        if entry.exact:
            self._memory.put(keys.exact, entry, None)
        if not self._available():
            return
        try:
            if entry.exact:
                self.client.set(keys.exact, entry.encode())
            else:
                self._put_heuristic(
                    keys=[keys.limits], args=[entry.encode(), entry.depth or 0, int(self.ttl_s)]
                )
        except self._redis_errors as error:
            self._failed(error)

    def ping(self) -> tuple[bool, str]:
        try:
            self.client.ping()
        except self._redis_errors as error:
            self._failed(error)
            return False, "redis unreachable (the server log has the error)"
        self._down_until = 0.0
        self._recovered()
        return True, "redis reachable"

    def size(self) -> int | None:
        return len(self._memory)

    @contextmanager
    def _single_flight(self, keys: Keys, wait_s: float) -> Iterator[Entry | None]:
        token = owner_token()
        lease_ms = int(LEASE_S * 1000)  # renewed while the holder searches (api.lease)
        deadline = time.monotonic() + wait_s + 0.25
        pause = 0.002
        holder = False
        while self._available():
            try:
                if self.client.set(keys.lock, token, nx=True, px=lease_ms):
                    holder = True
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
                entry = self.get(keys)
                if entry is not None:
                    metrics.CACHE_WAITS.inc()
                    yield entry
                    return
                if time.monotonic() > deadline:
                    break  # the holder is too slow: compute ourselves
                held_by = cast(bytes | None, self.client.get(keys.lock))
                if held_by is not None and holder_dead(held_by):  # killed here: take over
                    self._release(keys=[keys.lock], args=[held_by])
            except self._redis_errors as error:
                self._failed(error)
                break
        if not holder:
            yield None
            return
        try:
            with renewing(lambda: self._renew(keys=[keys.lock], args=[token, lease_ms]), keys.lock):
                # The holder may have stored it between our miss and the lock.
                yield self.get(keys)
        finally:
            try:
                self._release(keys=[keys.lock], args=[token])
            except self._redis_errors as error:
                self._failed(error)


def make_cache(settings: Settings, *, max_connections: int) -> AnswerCache:
    """The answer cache the settings configure: Redis behind an LRU, or the embedded store
    shared by every process of the machine (:mod:`api.embedded`)."""
    if settings.redis_url:
        return RedisCache(
            settings.redis_url,
            ttl_s=settings.cache_ttl_s,
            lru_size=settings.lru_size,
            timeout_s=settings.redis_timeout_s,
            max_connections=max_connections,
        )
    from kalah_core.databases import cache_dir

    from .embedded import EmbeddedCache

    return EmbeddedCache(
        settings.cache_dir or cache_dir() / "answers",
        size_mb=settings.cache_mb,
        ttl_s=settings.cache_ttl_s,
        lru_size=settings.lru_size,
    )
