"""The Kalah analysis service: a Flask REST API over :mod:`kalah_core`.

Installed as ``kalah_service`` (its source folder is ``api/``; pyproject.toml maps the name), so
it never collides with another distribution's top-level ``api``. The app is built by
:func:`kalah_service.app.create_app` (also importable as ``kalah_service.create_app``);
importing this package alone loads nothing of Flask, so that
:mod:`kalah_service.ops.gunicorn_conf` can set up the environment (Prometheus multiprocess
mode) before the app and its metrics load, and so that ``kalah`` finds the service commands
(:mod:`kalah_service.ops.commands`) cheaply.

The folders are storeys: each imports only the storeys below it (``tests/test_layers.py``
checks that the folders' graph has no cycle), so a reader can learn the service from the
ground up and a change in a storey can only break the ones above it. From the ground:

- ``base/``: the settings (every environment variable, read in one place) and the metrics;
- ``stores/``: the Redis-or-local seams (answers, rate-limit counters, API keys), each one
  interface with its ``errors`` and its two backends beside it, and the compute-once leases;
- ``core/``: the analysis without HTTP: the request type, the answer, the engines, the
  analyser, live analysis, play and game review, the endgame databases of the process;
- ``ratelimit/``: the cost policy and the buckets (no HTTP: the batch workers charge
  through them too);
- ``jobs/``: batch jobs: the job store (the fourth seam) and its backends, the runner loop,
  ``kalah worker``, and ``kalah batch`` run locally or through a server;
- ``edge/``: what HTTP adds around every resource: problems as answers, callers and their
  keys, charging, forwarding headers, body bounds, security headers, the spec's plugins;
- ``schemas/`` and one folder per resource (``analysis/``, ``batch/``, ``board/``,
  ``games/``, ``health/``, ``play/``, ``problems/``, ``rules/``): routes and schemas; no
  resource imports another;
- ``ops/``: running the service: the one factory of every backend from the settings
  (:mod:`kalah_service.ops.backends`), the commands, gunicorn and its worker, docs/config.md.

Left flat are the app factory (``app.py``) and the entry points over it: ``wsgi.py``
(gunicorn's app) and ``export_openapi.py`` (``api/openapi.json``), which import the app and
so stand above every storey. The split follows what a newcomer asks first (where does a
request enter, where is the state, where do jobs run) rather than the framework's kinds of
file: ``jobs/`` and ``stores/`` hold whole concepts, ``edge/`` everything only HTTP needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .app import create_app as create_app
    from .app import openapi_text as openapi_text

_LAZY = frozenset({"create_app", "openapi_text"})


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module 'kalah_service' has no attribute {name!r}")
