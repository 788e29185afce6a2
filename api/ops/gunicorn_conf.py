"""gunicorn settings for the Kalah API: ``gunicorn -c python:kalah_service.ops.gunicorn_conf``.

A module of the installed package (``kalah serve`` and the container use it), so the service
runs from a wheel with no source tree around.

Everything comes from the ``KALAH_*`` environment variables through ``kalah_service.base.config``
(see ``docs/config.md``); command-line options (``-b``, ``-w``) still override these.

- workers: ``KALAH_WORKERS`` (default: the CPUs this process may use), each a ``gthread``
  worker with ``KALAH_THREADS`` threads and ``KALAH_ENGINES`` engines, so several searches
  run at once and neither they nor their queue hold up cached answers or health checks;
  ``kalah_service.ops.gworker`` adds a read timeout (``KALAH_CLIENT_TIMEOUT_S``) so clients that
  stall mid-request cannot hold every thread.
- ``preload_app``: the app, the compiled extension (and later the endgame database) load once
  in the master and are shared copy-on-write; each worker creates its own engines on first use.
- ``timeout``: well above the longest search a request may start (3 x KALAH_MAX_TIME_MS + 30 s).
- ``max_requests`` (``KALAH_MAX_REQUESTS``, default 20000) with ``max_requests_jitter``
  (``KALAH_MAX_REQUESTS_JITTER``, default a tenth of it): workers are recycled with jitter.
- Prometheus multiprocess: ``PROMETHEUS_MULTIPROC_DIR`` is set (to a fresh temporary folder
  unless given) before the app is imported, emptied at start, and a dead worker's files are
  marked by ``child_exit`` so ``/metrics`` aggregates every worker.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from flask import Flask
    from gunicorn.arbiter import Arbiter
    from gunicorn.workers.base import Worker

# Must happen before prometheus_client is imported (by the preloaded app); importing the
# ``api`` package itself loads nothing (see api/__init__.py).
_OWN_METRICS_DIR = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _OWN_METRICS_DIR:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="kalah-metrics-")
_METRICS_DIR = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
_METRICS_DIR.mkdir(parents=True, exist_ok=True)

from ..base.config import load_settings, worker_timeout_s  # noqa: E402

_settings = load_settings()

wsgi_app = "kalah_service.wsgi:app"
bind = [os.environ.get("KALAH_BIND", "127.0.0.1:8000")]
workers = _settings.workers
# gthread + a read timeout on client sockets
worker_class = "kalah_service.ops.gworker.ThreadWorker"
threads = _settings.threads
preload_app = True
timeout = worker_timeout_s(_settings)
graceful_timeout = 30
keepalive = 5
# Recycle workers now and then (a leak cannot grow for ever), with jitter so they do not all
# restart at once; a recycled worker finishes its requests first. 0 turns recycling off.
max_requests = int(os.environ.get("KALAH_MAX_REQUESTS", "20000"))
max_requests_jitter = int(os.environ.get("KALAH_MAX_REQUESTS_JITTER", str(max_requests // 10)))
accesslog = None
errorlog = "-"
loglevel = os.environ.get("KALAH_LOG_LEVEL", "info")
proc_name = "kalah-api"
control_socket_disable = True  # gunicorn >= 25: no shared control socket between instances


def on_starting(server: Arbiter) -> None:
    """Drop metric files left by an earlier run in the same folder; name this process (the
    master) as the server that background database builds stop with
    (``kalah_service.core.endgames``)."""
    for path in _METRICS_DIR.glob("*.db"):
        path.unlink(missing_ok=True)
    os.environ["KALAH_SERVER_PID"] = str(os.getpid())


def post_fork(server: Arbiter, worker: Worker) -> None:
    """Hand the GIL over every 0.5 ms instead of 5 ms. The solver drops the GIL for each of
    its many searches and takes it back between them; while the worker's other threads serve
    cached answers, each take-back waited up to a whole interval, so small analyses next to
    busy threads took many times their time and ran out of budget (figures: HISTORY.md)."""
    import sys

    sys.setswitchinterval(0.0005)


def post_worker_init(worker: Worker) -> None:
    """Open the worker's endgame databases (and in ``auto`` start their background builds)
    and make its engines in the background (see kalah_service.core.engines), before its
    first request."""
    analyser = cast("Flask", worker.app.wsgi()).extensions["kalah"]
    analyser.databases()
    analyser.engines().prepare()


def child_exit(server: Arbiter, worker: Worker) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]  # prometheus_client: unannotated


def on_exit(server: Arbiter) -> None:
    if _OWN_METRICS_DIR:
        shutil.rmtree(_METRICS_DIR, ignore_errors=True)
