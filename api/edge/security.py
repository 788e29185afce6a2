"""Browser-facing headers: CORS on the public endpoints and standard security headers.

CORS (flask-cors) covers :data:`CORS_PATHS` for the origins of ``KALAH_CORS_ORIGINS`` (``*``
by default: the answers are public and no cookie is ever used), lets a page send
``Authorization`` and ``If-None-Match``, and exposes the headers a client needs to read:
``ETag``, ``Retry-After``, the ``RateLimit-*`` headers and ``Kalah-Cost``.

Every answer gets ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
``X-Frame-Options: DENY`` and a Content-Security-Policy that allows nothing (the API serves
JSON only); the board page and ``/docs`` set their own, which allow this service only
(:mod:`kalah_service.board.page`).
"""

from __future__ import annotations

from flask import Flask, Response
from flask_cors import CORS

from ..base.config import Settings

CORS_PATHS = (
    r"/v1/analysis",
    r"/v1/best-move",
    r"/v1/rules",
    r"/v1/play",
)
"""Public endpoints a browser page on another origin may call."""

EXPOSED_HEADERS = (
    "ETag",
    "Retry-After",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Kalah-Cost",
)
ALLOWED_HEADERS = ("Authorization", "Content-Type", "If-None-Match")

API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def init_security(app: Flask, settings: Settings) -> None:
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()] or ["*"]
    CORS(
        app,
        resources={
            path: {
                "origins": origins,
                "methods": ["GET", "POST", "OPTIONS"],
                "allow_headers": list(ALLOWED_HEADERS),
                "expose_headers": list(EXPOSED_HEADERS),
                "max_age": 600,
            }
            for path in CORS_PATHS
        },
    )

    @app.after_request
    def security_headers(response: Response) -> Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Content-Security-Policy", API_CSP)
        return response
