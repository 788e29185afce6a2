"""Every Redis-or-local backend, built from the settings in this one place.

The service keeps four kinds of state, each behind one interface with its ``errors`` (what
the backend raises when it fails) and its implementations beside it:

=========  ===========================================  ====================================
seam       interface                                    Redis / local
=========  ===========================================  ====================================
answers    :class:`~kalah_service.stores.answers.AnswerStore`  ``KALAH_REDIS_URL`` / SQLite
jobs       :class:`~kalah_service.jobs.store.JobStore`         state Redis / ``diskcache``
counters   :class:`~kalah_service.stores.counters.Counters`    state Redis / SQLite
keys       :class:`~kalah_service.stores.keys.KeyStore`        state Redis / in the process
=========  ===========================================  ====================================

The answers live in ``KALAH_REDIS_URL``'s Redis (a cache, which may forget); jobs, counters
and keys in the state store (``KALAH_STATE_REDIS_URL``, else the same Redis), which must not
(:mod:`kalah_service.stores.state`). Without Redis every local backend sits beside the
embedded answer store, so every process of a machine shares it. Callers get their backends
from here (the app, the commands, the worker), never decide Redis-or-local themselves.
"""

from __future__ import annotations

from pathlib import Path

from kalah_core.databases import cache_dir

from ..base.config import Settings, load_settings
from ..core.analyser import Analyser
from ..jobs.embedded_jobs import EmbeddedJobStore
from ..jobs.redis_jobs import RedisJobStore
from ..jobs.store import JobStore
from ..ratelimit.buckets import Buckets
from ..stores.answers import AnswerStore
from ..stores.counters import Counters
from ..stores.embedded_answers import EmbeddedStore
from ..stores.embedded_counters import EmbeddedCounters
from ..stores.keys import KeyStore
from ..stores.memory_keys import MemoryKeyStore
from ..stores.redis_answers import RedisStore
from ..stores.redis_counters import RedisCounters
from ..stores.redis_keys import RedisKeyStore
from ..stores.state import StatePing, check_state_store, make_state_client

STATE_CHECK_TIMEOUT_S = 2.0
"""How long a process starting waits for the state store to say how it is configured."""

STATE_PING_TIMEOUT_S = 1.0
"""How long ``/readyz`` waits for the state store's PING (the probe's own timeout is 3 s)."""


def _answers_folder(settings: Settings) -> Path:
    """The embedded answer store's folder; the other local backends are its siblings."""
    return Path(settings.cache_dir) if settings.cache_dir else cache_dir() / "answers"


def make_answer_store(settings: Settings, *, max_connections: int) -> AnswerStore:
    """The answer store: Redis behind an LRU, or the embedded store shared by every process of
    the machine."""
    if settings.redis_url:
        return RedisStore(
            settings.redis_url,
            ttl_s=settings.cache_ttl_s,
            lru_size=settings.lru_size,
            timeout_s=settings.redis_timeout_s,
            max_connections=max_connections,
        )
    return EmbeddedStore(
        _answers_folder(settings),
        size_mb=settings.cache_mb,
        ttl_s=settings.cache_ttl_s,
        lru_size=settings.lru_size,
    )


def make_job_store(settings: Settings, *, timeout_s: float | None = None) -> JobStore:
    """Jobs in the state Redis (run by ``kalah worker``), or without one in the embedded store
    beside the answers (run by the server's own processes)."""
    if settings.state_url:
        return RedisJobStore(
            settings.state_url,
            ttl_s=settings.job_ttl_s,
            timeout_s=settings.redis_timeout_s if timeout_s is None else timeout_s,
        )
    answers = _answers_folder(settings)
    return EmbeddedJobStore(answers.parent / (answers.name + "-jobs"), ttl_s=settings.job_ttl_s)


def make_counters(settings: Settings) -> Counters:
    """The rate limits' shared counters: in the state store, or beside the embedded answer
    store (one SQLite file for every process of the machine)."""
    if settings.state_url:
        return RedisCounters(settings.state_url, timeout_s=settings.redis_timeout_s)
    answers = _answers_folder(settings)
    return EmbeddedCounters(answers.parent / (answers.name + "-limits.sqlite"))


def make_key_store(settings: Settings, *, timeout_s: float | None = None) -> KeyStore:
    """API keys in the state store; without one, in the process (no key can be made)."""
    if settings.state_url:
        return RedisKeyStore(
            settings.state_url,
            timeout_s=settings.redis_timeout_s if timeout_s is None else timeout_s,
        )
    return MemoryKeyStore()


def make_state_ping(settings: Settings) -> StatePing | None:
    """What ``/readyz`` pings of the state store; None without one."""
    if not settings.state_url:
        return None
    return StatePing(settings.state_url, timeout_s=STATE_PING_TIMEOUT_S)


def check_state(settings: Settings) -> bool:
    """Refuse a state store that evicts (:func:`~kalah_service.stores.state.check_state_store`);
    False when there is none or it cannot be reached now."""
    if not settings.state_url:
        return False
    client = make_state_client(settings.state_url, timeout_s=STATE_CHECK_TIMEOUT_S)
    return check_state_store(client)


def worker_backends(settings: Settings) -> tuple[Analyser, JobStore, Buckets]:
    """A ``kalah worker``'s analyser (the API's answer store), job store and buckets."""
    if not settings.state_url:
        raise RuntimeError(
            "kalah worker needs KALAH_STATE_REDIS_URL or KALAH_REDIS_URL (the API's)"
        )
    check_state(settings)
    analyser = Analyser(settings, make_answer_store(settings, max_connections=4))
    return analyser, make_job_store(settings, timeout_s=10.0), Buckets(make_counters(settings))


_DEFAULT: list[Analyser] = []


def default_analyser() -> Analyser:
    """An analyser from the environment's settings, one per process (the command line's and
    the local batch runner's): the server's answer store and limits."""
    if not _DEFAULT:
        settings = load_settings()
        _DEFAULT.append(Analyser(settings, make_answer_store(settings, max_connections=2)))
    return _DEFAULT[0]
