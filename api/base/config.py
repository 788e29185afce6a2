"""Every setting of the service, read from environment variables in this one place.

``load_settings()`` reads the environment (plus overrides given to ``create_app``) and checks
every value; a bad value stops the service at start with a message naming the variable.
docs/config.md documents them, generated from this table by :mod:`kalah_service.ops.config_docs`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from limits import parse_many

MAX_BODY_BYTES = 64 * 1024
"""Largest request body accepted (413 above)."""

MAX_DEPTH = 100
"""Largest heuristic search depth (sowings) a client may ask for."""

MAX_MOVES = 1024
"""Most moves one ``POST /v1/play`` may apply."""

MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024
"""Largest ``POST /v1/batch`` body (413 above): room for about 100,000 compact positions."""

BATCH_PAGE_MAX = 1000
"""Most results per page of ``GET /v1/jobs/{id}`` in JSON (NDJSON streams any number)."""
MAX_PV_SOWINGS = 64
"""Longest principal variation an answer carries, in sowings (the engine's ``pv_limit``)."""

TIERS = ("anonymous", "standard", "premium")
"""Rate-limit tiers, lowest first: anonymous callers (by IP) get the first."""

LIMITS_MODES = ("auto", "on", "off")
"""``KALAH_LIMITS``: ``auto`` limits every caller except one connecting from a loopback address
with no forwarding header to a server without a state store (a person's own machine; see
:func:`kalah_service.edge.charging.limits_apply`); ``on`` limits everyone, ``off`` no one."""


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class Settings:
    """The service's configuration; see docs/config.md for each variable."""

    redis_url: str | None = None
    state_redis_url: str | None = None
    """The state store (API keys, jobs, rate-limit counters); unset: the Redis of
    ``redis_url``. It must never evict (checked at start) and should persist."""
    tt_mb: int = 64
    search_threads: int = 1
    """Threads of each search; 1 because gunicorn already runs a worker per core."""
    default_time_ms: int = 1000
    max_time_ms: int = 10000
    max_nodes: int = 1_000_000_000
    stream_max_time_ms: int = 60_000
    """The longest budget of a live analysis (``Accept: text/event-stream`` or
    ``application/x-ndjson``): longer than a one-shot's, since its caller sees it deepen."""
    stream_heartbeat_ms: int = 10_000
    """How long a live analysis stays silent before it sends a heartbeat (an SSE comment, a
    blank NDJSON line), so that proxies do not close a quiet stream."""
    egdb_path: str | None = None
    egdb_seeds: int | None = None
    """Size of the databases built in the background in ``auto`` mode (0: build none; None:
    ``auto``, sized for the machine by :func:`kalah_service.core.endgames.choose_sizes`)."""
    workers: int = 1
    threads: int = 16
    engines: int = 6
    """Engines per worker process: searches that run at once (the last kept for short ones);
    at most ``threads - 2`` (see engine_slots)."""

    long_nice: int = 10
    """How much lower the CPU priority of long searches is (their threads' nice value)."""

    def engine_slots(self) -> tuple[int, int]:
        """(engines, searches that may wait for one) per worker: engines leave two threads
        free, waiting searches one, so a health check always finds a thread."""
        engines = max(1, min(self.engines, self.threads - 2))
        return engines, max(0, min(engines, self.threads - 1 - engines))

    cache_ttl_s: int = 3600
    lru_size: int = 10000
    cache_dir: str | None = None
    """The embedded answer store's folder (default ``answers`` in the cache folder)."""
    cache_mb: int = 512
    redis_timeout_s: float = 0.25
    batch_max_positions: int = 10000
    batch_inline_max: int = 16
    batch_max_budget_ms: int = 10_000_000
    batch_chunk: int = 32
    job_ttl_s: int = 86400
    lock_wait_ms: int = 0
    """How long a request waits for another worker computing the same key; 0 means the
    search budget plus a margin."""
    limits: str = "auto"
    """Who is rate limited: one of :data:`LIMITS_MODES`."""
    limit_anonymous: str = "120/minute"
    limit_standard: str = "1200/minute"
    limit_premium: str = "12000/minute"
    trusted_proxies: int = 0
    """Proxy hops whose ``X-Forwarded-For`` / ``Forwarded`` entry names the client
    (:mod:`kalah_service.edge.forwarding`); ``kalah serve --behind-proxy`` makes an unset one 1."""
    cors_origins: str = "*"
    metrics_allow: str = "127.0.0.0/8,::1"
    """Networks that may read ``/metrics`` (comma-separated; ``*``: anyone)."""

    @property
    def state_url(self) -> str | None:
        """The Redis holding what users rely on (keys, jobs, limits): never evicted."""
        return self.state_redis_url or self.redis_url

    def tier_limit(self, tier: str) -> str:
        """The rate limit (the `limits` library's syntax, in cost units) of ``tier``."""
        return str(getattr(self, f"limit_{tier}"))


class AutoInt:
    """The type (a tag in the table below) of a variable that is ``auto`` (None) or an int."""


# variable name -> (attribute, type, default, minimum, maximum)

_VARIABLES: dict[str, tuple[str, type, object, float | None, float | None]] = {
    "KALAH_REDIS_URL": ("redis_url", str, None, None, None),
    "KALAH_STATE_REDIS_URL": ("state_redis_url", str, None, None, None),
    "KALAH_TT_MB": ("tt_mb", int, 64, 1, 65536),
    "KALAH_SEARCH_THREADS": ("search_threads", int, 1, 1, 64),
    "KALAH_DEFAULT_TIME_MS": ("default_time_ms", int, 1000, 1, None),
    "KALAH_MAX_TIME_MS": ("max_time_ms", int, 10000, 1, 600_000),
    "KALAH_MAX_NODES": ("max_nodes", int, 1_000_000_000, 1, None),
    "KALAH_STREAM_MAX_TIME_MS": ("stream_max_time_ms", int, 60_000, 1, 3_600_000),
    "KALAH_STREAM_HEARTBEAT_MS": ("stream_heartbeat_ms", int, 10_000, 10, 600_000),
    "KALAH_EGDB_PATH": ("egdb_path", str, None, None, None),
    "KALAH_EGDB_SEEDS": ("egdb_seeds", AutoInt, None, 0, 32),
    "KALAH_WORKERS": ("workers", int, None, 1, 1024),
    "KALAH_THREADS": ("threads", int, 16, 1, 256),
    "KALAH_ENGINES": ("engines", int, 6, 1, 64),
    "KALAH_LONG_NICE": ("long_nice", int, 10, 0, 19),
    "KALAH_CACHE_TTL_S": ("cache_ttl_s", int, 3600, 1, None),
    "KALAH_LRU_SIZE": ("lru_size", int, 10000, 1, None),
    "KALAH_CACHE_DIR": ("cache_dir", str, None, None, None),
    "KALAH_CACHE_MB": ("cache_mb", int, 512, 1, None),
    "KALAH_REDIS_TIMEOUT_S": ("redis_timeout_s", float, 0.25, 0.001, 60),
    "KALAH_BATCH_MAX_POSITIONS": ("batch_max_positions", int, 10000, 1, 1_000_000),
    "KALAH_BATCH_INLINE_MAX": ("batch_inline_max", int, 16, 0, 1_000_000),
    "KALAH_BATCH_MAX_BUDGET_MS": ("batch_max_budget_ms", int, 10_000_000, 1, None),
    "KALAH_BATCH_CHUNK": ("batch_chunk", int, 32, 1, 10000),
    "KALAH_JOB_TTL_S": ("job_ttl_s", int, 86400, 60, None),
    "KALAH_LIMITS": ("limits", str, "auto", None, None),
    "KALAH_LIMIT_ANONYMOUS": ("limit_anonymous", str, "120/minute", None, None),
    "KALAH_LIMIT_STANDARD": ("limit_standard", str, "1200/minute", None, None),
    "KALAH_LIMIT_PREMIUM": ("limit_premium", str, "12000/minute", None, None),
    "KALAH_TRUSTED_PROXIES": ("trusted_proxies", int, 0, 0, 16),
    "KALAH_CORS_ORIGINS": ("cors_origins", str, "*", None, None),
    "KALAH_METRICS_ALLOW": ("metrics_allow", str, "127.0.0.0/8,::1", None, None),
}

ENV_NAMES = tuple(_VARIABLES)


def load_settings(
    overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from ``environ`` (default ``os.environ``), with ``overrides`` (same names,
    values already typed or text) taking precedence. Raises ValueError naming a bad variable."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, (attribute, kind, default, low, high) in _VARIABLES.items():
        raw: Any = environ.get(name)
        if overrides is not None and name in overrides:
            raw = overrides[name]
        if raw is None or raw == "":
            values[attribute] = _default_workers() if name == "KALAH_WORKERS" else default
            continue
        if kind is AutoInt and raw == "auto":
            values[attribute] = None
            continue
        try:
            value = (int if kind is AutoInt else kind)(raw)
        except (TypeError, ValueError):
            expected = "auto or int" if kind is AutoInt else kind.__name__
            raise ValueError(f"{name}={raw!r}: expected {expected}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{name}={raw!r}: expected {low}..{high if high is not None else ''}")
        values[attribute] = value
    settings = Settings(**values)
    if settings.default_time_ms > settings.max_time_ms:
        raise ValueError(
            f"KALAH_DEFAULT_TIME_MS={settings.default_time_ms} is above "
            f"KALAH_MAX_TIME_MS={settings.max_time_ms}"
        )
    if settings.limits not in LIMITS_MODES:
        raise ValueError(f"KALAH_LIMITS={settings.limits!r}: expected one of auto, on, off")
    for tier in TIERS:
        _check_limit(f"KALAH_LIMIT_{tier.upper()}", settings.tier_limit(tier))
    parse_networks(settings.metrics_allow)  # a ValueError naming a bad entry
    return settings


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(text: str) -> tuple[Network, ...] | None:
    """The networks of a ``KALAH_METRICS_ALLOW`` value (comma-separated addresses or CIDR
    networks; ``*``: anyone, returned as None). Raises ValueError naming a bad entry."""
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    if "*" in entries:
        return None
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"KALAH_METRICS_ALLOW: {entry!r} is not an address or network"
            ) from None
    return tuple(networks)


def _check_limit(name: str, value: str) -> None:
    try:
        parse_many(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a rate like 120/minute") from None


def worker_timeout_s(settings: Settings) -> int:
    """The gunicorn worker timeout: well above the longest search a request may start."""
    return int(settings.max_time_ms / 1000 * 3) + 30
