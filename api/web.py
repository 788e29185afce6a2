"""What every resource's routes share: the app's analyser, and an answer as an HTTP response
(its strong entity tag, ``Cache-Control`` and 304 on a conditional GET)."""

from __future__ import annotations

from flask import Response, current_app, request

from .core.analyser import Analyser
from .core.answer import Answer

IMMUTABLE = "public, max-age=31536000, immutable"
"""``Cache-Control`` of an exact answer: a proven value never changes."""


def analyser() -> Analyser:
    """The app's analyser (settings, answer store, engines)."""
    result: Analyser = current_app.extensions["kalah"]
    return result


def not_modified(tag: str) -> bool:
    """Whether the request's ``If-None-Match`` holds ``tag``."""
    return bool(request.if_none_match) and request.if_none_match.contains_weak(tag.strip('"'))


def answer_response(answer: Answer, *, conditional: bool) -> Response:
    """The answer with its strong ETag; a GET also gets Cache-Control and may be a 304."""
    headers = {"ETag": answer.etag}
    if conditional:
        headers["Cache-Control"] = IMMUTABLE if answer.exact else "no-cache"
        if not_modified(answer.etag):
            return Response(status=304, headers=headers)
    return Response(answer.body(), status=200, mimetype="application/json", headers=headers)
