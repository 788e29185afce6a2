"""What every resource's routes share: the app's analyser, and an answer as an HTTP response
(its strong entity tag, ``Cache-Control`` and 304 on a conditional GET)."""

from __future__ import annotations

import select
import socket
from collections.abc import Callable, Iterator
from typing import Any

from flask import Response, current_app, request

from ..core.analyser import Analyser
from ..core.live import MEDIA_TYPES, Live
from ..core.reply import Answer
from ..core.request import AnalysisRequest
from .charging import charge_stream

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


def live_type() -> str | None:
    """The live analysis's media type the request prefers to JSON, if any
    (:data:`kalah_service.core.live.MEDIA_TYPES`)."""
    best = request.accept_mimetypes.best_match(("application/json", *MEDIA_TYPES))
    return best if best in MEDIA_TYPES else None


def _client_alive(environ: dict[str, Any]) -> Callable[[], bool]:
    """Whether the client of this request is still connected: its socket (gunicorn's, or
    the development server's) does not read end-of-file. Without a socket (the test client)
    always True: a client that goes away is seen when the response is closed."""
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    if not isinstance(sock, socket.socket):
        return lambda: True

    def alive() -> bool:
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return True
            return sock.recv(1, socket.MSG_PEEK) != b""  # data: a request pipelined next
        except (OSError, ValueError):
            return False

    return alive


def live_response(request_: AnalysisRequest, media_type: str) -> Response:
    """A live analysis of ``request_`` as server-sent events or NDJSON (the answer last);
    see :mod:`kalah_service.core.live`. Proxies are told not to buffer it
    (``X-Accel-Buffering``)."""
    the_analyser = analyser()
    live = Live(
        the_analyser,
        request_,
        alive=_client_alive(request.environ),
        heartbeat_s=the_analyser.settings.stream_heartbeat_ms / 1000.0,
    )
    live.start(charge_stream)
    sse = media_type == "text/event-stream"

    def frames() -> Iterator[bytes]:
        for event in live.events():
            if event is None:
                yield b": heartbeat\n\n" if sse else b"\n"
            else:
                yield b"data: " + event + b"\n\n" if sse else event + b"\n"

    response = Response(frames(), status=200, mimetype=media_type)
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    response.call_on_close(live.close)
    return response
