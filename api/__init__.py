"""The Kalah analysis service: a Flask REST API over :mod:`kalah_core`.

The app is built by :func:`api.app.create_app` (also importable as ``api.create_app``);
importing this package alone loads nothing of Flask, so that :mod:`api.gunicorn_conf` can set
up the environment (Prometheus multiprocess mode) before the app and its metrics load, and so
that ``kalah`` finds the service commands (:mod:`api.commands`) cheaply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app as create_app
    from .app import openapi_text as openapi_text

_LAZY = frozenset({"create_app", "openapi_text"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module 'api' has no attribute {name!r}")
