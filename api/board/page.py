"""The analysis board page at ``/`` and the API docs at ``/docs``, served from files inside
the package: no CDN, no other host, no build step.

The page is plain HTML, CSS and ES modules under ``static/`` (one module per job, see
``static/js/main.js``); it is a client of the public API like any other. Its
Content-Security-Policy allows only this service. ``/docs`` is Swagger UI from the
``swagger-ui-bundle`` package with a small script of ours, under the same policy (plus inline
styles, which Swagger UI sets).

Every file is served with ``Cache-Control: no-cache`` and an ETag: a browser revalidates with
a cheap 304 and never runs an old script after an upgrade.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, abort, send_from_directory
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

STATIC = Path(__file__).resolve().parent / "static"
SWAGGER_ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"})

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
NO_CACHE = "no-cache"

bp = Blueprint("page", __name__)


def _send(folder: Path, name: str, *, csp: str | None = None) -> Response:
    response = send_from_directory(folder, name, max_age=None)
    response.headers["Cache-Control"] = NO_CACHE
    if name.endswith(".js"):
        response.mimetype = "text/javascript"
    if csp:
        response.headers["Content-Security-Policy"] = csp
    return response


@bp.get("/")
def index() -> Response:
    return _send(STATIC, "index.html", csp=PAGE_CSP)


@bp.get("/board/<path:name>")
def asset(name: str) -> Response:
    if name.endswith(".html"):
        abort(404)
    return _send(STATIC, name)


@bp.get("/docs")
def docs() -> Response:
    return _send(STATIC, "docs.html", csp=DOCS_CSP)


@bp.get("/docs/assets/<name>")
def docs_asset(name: str) -> Response:
    if name not in SWAGGER_ASSETS:
        abort(404)
    return _send(Path(str(swagger_ui_path)), name)
