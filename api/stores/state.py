"""The state store: the Redis holding what users rely on (API keys, batch jobs and their queue,
rate-limit counters), kept apart from the answer cache, which may forget.

``KALAH_STATE_REDIS_URL`` names it (unset: the Redis of ``KALAH_REDIS_URL``). A state store
that evicts would drop keys and jobs when it fills up (every key a 401, every job a 404), so
the service refuses to start on one (:func:`check_state_store`): its ``maxmemory-policy`` must
be ``noeviction``, under which a full store refuses writes (a 503 for a new job) instead. It
should also persist (``appendonly yes``): without persistence a restart loses every key and
job, which is logged as a warning (tests and throwaway setups run that way).
"""

from __future__ import annotations

import logging
from typing import cast

import redis

log = logging.getLogger(__name__)

STATE_POLICY = "noeviction"


class EvictingStateStore(RuntimeError):
    """The state store is configured to evict keys: refuse to start."""


def make_state_client(url: str, *, timeout_s: float) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)


class StatePing:
    """The state store as ``/readyz`` checks it: a PING, failing with one of :attr:`errors`."""

    errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self.client = make_state_client(url, timeout_s=timeout_s)

    def ping(self) -> None:
        self.client.ping()


def check_state_store(client: redis.Redis, *, what: str = "KALAH_STATE_REDIS_URL") -> bool:
    """Raise :class:`EvictingStateStore` if the Redis of ``client`` evicts; warn if it does not
    persist. Returns False (and logs) when it cannot be reached: the service starts and
    serves, and keys and jobs are unavailable until the store is back."""
    try:
        memory = client.info("memory")
        persistence = client.info("persistence")
    except (redis.RedisError, OSError) as error:
        log.warning("state store (%s) unreachable at start: %s", what, error)
        return False
    policy = str(memory.get("maxmemory_policy", STATE_POLICY))
    if policy != STATE_POLICY:
        raise EvictingStateStore(
            f"the state store ({what}) has maxmemory-policy {policy}: it would evict API keys "
            f"and jobs when full; give keys and jobs a Redis with maxmemory-policy "
            f"{STATE_POLICY} (and appendonly yes), e.g. KALAH_STATE_REDIS_URL apart from the "
            "cache's KALAH_REDIS_URL"
        )
    if not persistence.get("aof_enabled") and not _saves(client):
        log.warning(
            "the state store (%s) does not persist (appendonly no, no save points): "
            "a restart loses every API key and job",
            what,
        )
    return True


def _saves(client: redis.Redis) -> bool:
    """Whether RDB snapshots are configured (CONFIG may be disabled: then assume they are)."""
    try:
        reply = cast(dict[str, str], client.config_get("save"))
    except redis.RedisError:
        return True
    return bool(reply.get("save", "").strip())
