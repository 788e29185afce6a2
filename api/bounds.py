"""Request bodies that cannot be read or decoded: refused as problems before any view.

A client that stops sending its body for ``KALAH_CLIENT_TIMEOUT_S`` (the socket timeout of
``api.gworker``) gets a 408.

webargs decodes bodies with :func:`json.loads` and turns only a ``JSONDecodeError`` into a 400;
a body nested deeper than the interpreter's recursion limit (``[[[[...``, a few KiB) or holding
an integer of more than 4300 digits raises something else and would be a 500. This hook decodes
a JSON body once more beforehand (bodies are at most 64 KiB, a batch's 4 MiB: milliseconds)
and refuses those.
"""

from __future__ import annotations

import contextlib
import json
import socket

from flask import Flask, request
from werkzeug.exceptions import ClientDisconnected

from .config import MAX_BATCH_BODY_BYTES
from .errors import ApiProblem

BODY_LIMITS = {"batch.Batch": MAX_BATCH_BODY_BYTES}
"""Endpoints whose bodies may be larger than the app's ``MAX_CONTENT_LENGTH``."""


def init_body_guard(app: Flask) -> None:
    @app.before_request
    def refuse_undecodable_json() -> None:
        if request.endpoint in BODY_LIMITS:
            request.max_content_length = BODY_LIMITS[request.endpoint]
        if request.method not in ("POST", "PUT", "PATCH") or not request.is_json:
            return
        try:
            data = request.get_data(cache=True)
        except (OSError, ClientDisconnected):  # the socket timed out: the client stalled
            _stop_reading()
            raise ApiProblem(
                "request-timeout", "the request body did not arrive in time", field="body"
            ) from None
        if not data:
            return
        try:
            json.loads(data)
        except RecursionError:
            raise ApiProblem(
                "malformed-body", "the request body is nested too deeply", field="body"
            ) from None
        except ValueError as error:  # JSONDecodeError is left to webargs (same answer)
            if isinstance(error, json.JSONDecodeError):
                return
            raise ApiProblem(
                "malformed-body", f"the request body cannot be decoded: {error}", field="body"
            ) from None


def _stop_reading() -> None:
    """Read no more from a stalled client: gunicorn would otherwise try to drain the rest of
    its body (several seconds of a thread) before closing the connection after our answer."""
    sock = request.environ.get("gunicorn.socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RD)
