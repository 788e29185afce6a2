"""The analysis board page at ``/`` and the API docs at ``/docs``, served from files inside
the package: no CDN, no other host, no build step.

The page is plain HTML, CSS and ES modules under ``static/`` (one module per job, see
``static/js/main.js``); it is a client of the public API like any other. Its
Content-Security-Policy allows only this service. ``/docs`` is Swagger UI from the
``swagger-ui-bundle`` package with a small script of ours, under the same policy (plus inline
styles, which Swagger UI sets).

The page names its files under ``/board/<digest of every file>/``: those are served
``immutable`` for a year, so a returning browser asks only for the page (``no-cache``, a 304)
and the API; a new release has a new digest, so a browser never runs an old script. Files
asked for without the digest (or with an old one) are served ``no-cache`` with an ETag.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from flask import Blueprint, Response, abort, request, send_from_directory
from swagger_ui_bundle import swagger_ui_path

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
IMMUTABLE = "public, max-age=31536000, immutable"


def _digest(folder: Path) -> str:
    """A short digest of every file under ``folder``, names included."""
    digest = hashlib.blake2b(digest_size=6)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


_VERSION_PATTERN = re.compile(r"[0-9a-f]{12}")
VERSION = _digest(STATIC)
"""The digest of the files this process serves: the versioned prefix of their URLs."""


def _page(name: str) -> bytes:
    """An HTML page of ``static/`` with its file URLs under the versioned prefix."""
    return (STATIC / name).read_bytes().replace(b'"/board/', f'"/board/{VERSION}/'.encode())


PAGES = {name: _page(name) for name in ("index.html", "docs.html")}

bp = Blueprint("page", __name__)


def _send(folder: Path, name: str, *, cache: str = NO_CACHE) -> Response:
    response = send_from_directory(folder, name, max_age=None)
    response.headers["Cache-Control"] = cache
    if name.endswith(".js"):
        response.mimetype = "text/javascript"
    return response


def _send_page(name: str, csp: str) -> Response:
    response = Response(PAGES[name], mimetype="text/html")
    response.set_etag(hashlib.blake2b(PAGES[name], digest_size=16).hexdigest())
    response.headers["Cache-Control"] = NO_CACHE
    response.headers["Content-Security-Policy"] = csp
    response.make_conditional(request)
    return response


@bp.get("/")
def index() -> Response:
    return _send_page("index.html", PAGE_CSP)


@bp.get("/board/<path:name>")
def asset(name: str) -> Response:
    """A file of the page: ``<version>/<name>`` for ever, ``<name>`` revalidated."""
    version, _, rest = name.partition("/")
    cache = NO_CACHE
    if rest and _VERSION_PATTERN.fullmatch(version):
        # An old page's prefix gets today's file, revalidated: a reload brings the new page.
        name, cache = rest, IMMUTABLE if version == VERSION else NO_CACHE
    if name.endswith(".html"):
        abort(404)
    return _send(STATIC, name, cache=cache)


@bp.get("/docs")
def docs() -> Response:
    return _send_page("docs.html", DOCS_CSP)


@bp.get("/docs/assets/<name>")
def docs_asset(name: str) -> Response:
    if name not in SWAGGER_ASSETS:
        abort(404)
    return _send(Path(str(swagger_ui_path)), name)
