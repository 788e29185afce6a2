"""The answer store in Redis: shared by every worker and replica.

Keys as in :mod:`.answers`; a heuristic entry is replaced only by a deeper one (a script), and
a key's lock is ``SET NX PX`` (its release and renewal scripts check the holder). Every Redis
failure is a miss: the request is computed and answered, Redis is skipped for a short
back-off, then tried again on the next request or health check; there is no permanent
failure state.
"""

from __future__ import annotations

import logging
import time
from typing import cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..base import metrics
from .answers import PREFIX, AnswerStore, Entry, Keys, Lru

log = logging.getLogger(__name__)


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


class RedisStore(AnswerStore):
    """Redis shared by all workers, with an in-process LRU of exact entries in front."""

    backend = "redis"

    errors = (redis.RedisError, OSError)

    BACKOFF_S = 0.5
    """After a Redis failure, requests skip Redis this long (a health check always tries)."""

    def __init__(
        self, url: str, *, ttl_s: float, lru_size: int, timeout_s: float, max_connections: int
    ) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self._memory = Lru(lru_size)
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

    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    def failed(self, error: BaseException) -> None:
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

    # -- entries ---------------------------------------------------------------------------

    def lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        entry = self._memory.get(keys.exact)
        if entry is not None:
            return entry, "memory"
        if not self.available():
            return None, "redis"
        try:
            exact, limited = cast(list[bytes | None], self.client.mget(keys.exact, keys.limits))
        except self.errors as error:
            self.failed(error)
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
        if not self.available():
            return
        try:
            if entry.exact:
                self.client.set(keys.exact, entry.encode())
            else:
                self._put_heuristic(
                    keys=[keys.limits], args=[entry.encode(), entry.depth or 0, int(self.ttl_s)]
                )
        except self.errors as error:
            self.failed(error)

    def ping(self) -> tuple[bool, str]:
        """Whether Redis takes a write now (one that answers errors, e.g. out of memory, still
        answers a PING)."""
        try:
            self.client.set(f"{PREFIX}:probe", b"1", ex=60)
        except self.errors as error:
            self.failed(error)
            return False, "redis unreachable or failing (the server log has the error)"
        self._down_until = 0.0
        self._recovered()
        return True, "redis reachable"

    def size(self) -> int | None:
        return len(self._memory)

    # -- locks -----------------------------------------------------------------------------

    def take_lock(self, lock: str, token: str, lease_s: float) -> bool:
        return bool(self.client.set(lock, token, nx=True, px=int(lease_s * 1000)))

    def lock_holder(self, lock: str) -> bytes | None:
        return cast(bytes | None, self.client.get(lock))

    def renew_lock(self, lock: str, token: str, lease_s: float) -> None:
        self._renew(keys=[lock], args=[token, int(lease_s * 1000)])

    def release_lock(self, lock: str, token: bytes | str) -> None:
        self._release(keys=[lock], args=[token])
