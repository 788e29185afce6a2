"""The Kalah analysis service: a Flask REST API over :mod:`kalah_core`.

Installed as ``kalah_service`` (its source folder is ``api/``; pyproject.toml maps the name), so
it never collides with another distribution's top-level ``api``. The app is built by
:func:`kalah_service.app.create_app` (also importable as ``kalah_service.create_app``);
importing this package alone loads nothing of Flask, so that :mod:`kalah_service.ops.gunicorn_conf`
can set up the environment (Prometheus multiprocess mode) before the app and its metrics load,
and so that ``kalah`` finds the service commands (:mod:`kalah_service.ops.commands`) cheaply.
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
    raise AttributeError(f"module 'kalah_service' has no attribute {name!r}")
