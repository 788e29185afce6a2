"""Prometheus metrics, correct across gunicorn workers.

With ``PROMETHEUS_MULTIPROC_DIR`` set (``api/ops/gunicorn_conf.py`` sets it up before the app
is imported), every worker writes its samples to files there and ``/metrics`` aggregates
them all; without it (tests, a single process) the default registry is served.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as _multiprocess

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

REQUESTS = Counter(
    "kalah_http_requests",
    "HTTP requests answered, by endpoint, method and status",
    ["endpoint", "method", "status"],
)
LATENCY = Histogram(
    "kalah_http_request_duration_seconds",
    "Time to answer an HTTP request, by endpoint, method and status",
    ["endpoint", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
CACHE = Counter(
    "kalah_cache_lookups",
    "Answer cache lookups, by level (memory, embedded, redis) and result",
    ["level", "result"],
)
CACHE_WAITS = Counter(
    "kalah_cache_lock_waits",
    "Requests answered by waiting for another worker computing the same key",
)
REDIS_ERRORS = Counter(
    "kalah_redis_errors", "Redis operations that failed (the request was still answered)"
)
SEARCH_NODES = Counter("kalah_search_nodes", "Nodes searched by the engine")
SEARCH_SECONDS = Histogram(
    "kalah_search_duration_seconds",
    "Time spent in one engine search",
    ["kind"],
    buckets=LATENCY_BUCKETS,
)
ANSWERS = Counter(
    "kalah_analysis_answers",
    "Analyses answered, exact or heuristic, cached or computed",
    ["kind", "cached"],
)

ENGINES_BUSY = Gauge(
    "kalah_engines_busy",
    "Engines searching now (one-shot searches and live streams), summed over live workers",
    multiprocess_mode="livesum",
)


def render() -> tuple[bytes, str]:
    """The exposition text of every worker's metrics and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST


def mark_process_dead(pid: int) -> None:
    """Called by gunicorn's ``child_exit`` hook so a dead worker's live gauges are dropped."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        _multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
