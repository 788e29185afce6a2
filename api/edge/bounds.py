"""Request bodies that cannot be read or decoded: refused as problems before any view.

A client that stops sending its body for ``KALAH_CLIENT_TIMEOUT_S`` (the socket timeout of
``kalah_service.ops.gworker``) gets a 408. A chunked body gunicorn cannot parse (an invalid chunk
size or extension, a missing CRLF after a chunk) is a 400 naming ``body``: gunicorn raises its own
``ParseException`` from ``wsgi.input``, which is no ``OSError``.

webargs decodes bodies with :func:`json.loads` and turns only a ``JSONDecodeError`` into a 400;
a body nested deeper than the interpreter's recursion limit (``[[[[...``, a few KiB) or holding
an integer of more than 4300 digits raises something else and would be a 500, and webargs and
marshmallow recurse several frames per level, so a body nested ~970 levels deep still decodes
but overflows the stack in the schema. This hook decodes a JSON body once more beforehand
(bodies are at most 64 KiB, a batch's 4 MiB: milliseconds) and refuses those, and bodies
nested more than :data:`MAX_NESTING` levels deep (no valid request nests more than 5).

On a server with a state store (keys live there), a batch body above the usual 64 KiB needs an
API key (only key holders may run jobs there): an anonymous caller's large body is refused
with a 401 before it is read or parsed (without one there are no keys, and the server's own
processes run anyone's jobs).
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
from collections.abc import Callable, Iterable, Iterator

from flask import Flask, Response, current_app, request
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import ClientDisconnected

from ..base.config import MAX_BATCH_BODY_BYTES, MAX_BODY_BYTES
from ..core.problems import ApiProblem
from .callers import current_caller, require_key
from .http_errors import problem_for

BODY_LIMITS = {"batch.Batch": MAX_BATCH_BODY_BYTES}
"""Endpoints whose bodies may be larger than the app's ``MAX_CONTENT_LENGTH`` (for callers
with an API key)."""

MAX_NESTING = 500
"""Deepest JSON nesting accepted in a body (a 400 deeper)."""


def too_deep(value: object, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` (decoded JSON) nests containers more than ``limit`` levels deep; a
    walk without recursion, over the containers only."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        assert isinstance(children, Iterable)
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _malformed_framing(error: Exception) -> ApiProblem:
    """The problem for a body gunicorn could not unframe (its chunked decoding failed)."""
    stop_reading()  # the rest of the stream cannot be framed either: close after answering
    return ApiProblem(
        "malformed-body",
        f"the request body's chunked encoding is malformed ({type(error).__name__})",
        field="body",
    )


def init_body_guard(app: Flask, on_read: Callable[[int], None] | None = None) -> None:
    """Refuse bodies that cannot be read or decoded; ``on_read`` is told the length of a
    chunked body once it is read, before it is parsed (the rate limits charge it)."""

    @app.errorhandler(ParseException)
    def malformed_framing(error: Exception) -> Response:
        """Wherever else the body is first read (a view, webargs), it is a 400 too."""
        return problem_for(_malformed_framing(error))

    @app.before_request
    def refuse_undecodable_json() -> None:
        if request.endpoint in BODY_LIMITS:
            keys_exist = current_app.extensions["kalah"].settings.state_url
            if current_caller().key_id is None and keys_exist:
                if (request.content_length or 0) > MAX_BODY_BYTES:
                    stop_reading()
                    require_key()  # a 401: large batches are jobs, and jobs need a key
            else:
                request.max_content_length = BODY_LIMITS[request.endpoint]
        if request.method not in ("POST", "PUT", "PATCH"):
            return
        if request.content_length is None and request.headers.get("Transfer-Encoding"):
            length = _read_chunked_body()
            if on_read is not None:
                on_read(length)
        if not request.is_json:
            if request.content_length or request.headers.get("Transfer-Encoding"):
                stop_reading()  # a body the API would ignore: refused, not answered
                raise ApiProblem(
                    "unsupported-media-type",
                    "the request body must be JSON (Content-Type: application/json)",
                    field="Content-Type",
                )
            return
        with _reading():
            data = request.get_data(cache=True)
        if not data:
            return
        try:
            decoded = json.loads(data)
            if isinstance(decoded, (dict, list)) and too_deep(decoded):
                raise RecursionError
        except RecursionError:
            raise ApiProblem(
                "malformed-body",
                f"the request body is nested too deeply (more than {MAX_NESTING} levels)",
                field="body",
            ) from None
        except ValueError as error:  # JSONDecodeError is left to webargs (same answer)
            if isinstance(error, json.JSONDecodeError):
                return
            raise ApiProblem(
                "malformed-body", f"the request body cannot be decoded: {error}", field="body"
            ) from None


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """Reading the body: a client that stalled (the socket timed out) is a 408, a body whose
    framing cannot be parsed a 400, both as problems."""
    try:
        yield
    except (OSError, ClientDisconnected):
        stop_reading()
        raise ApiProblem(
            "request-timeout", "the request body did not arrive in time", field="body"
        ) from None
    except ParseException as error:
        raise _malformed_framing(error) from None


def _read_chunked_body() -> int:
    """A chunked body (no Content-Length) read whole here, up to the endpoint's limit: werkzeug
    would cut it at the limit without a word and the view would answer the truncated part. It
    is put back as a body of known length."""
    limit = request.max_content_length or MAX_BODY_BYTES
    environ = request.environ
    with _reading():
        data = environ["wsgi.input"].read(limit + 1)
    if len(data) > limit:
        stop_reading()
        raise ApiProblem(
            "body-too-large",
            f"request bodies are limited to {limit} bytes",
            field="body",
            max=limit,
        )
    environ["wsgi.input"] = io.BytesIO(data)
    environ["CONTENT_LENGTH"] = str(len(data))
    environ["wsgi.input_terminated"] = False
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    return len(data)


def stop_reading() -> None:
    """Read no more from a stalled client: gunicorn would otherwise try to drain the rest of
    its body (several seconds of a thread) before closing the connection after our answer."""
    request.environ["kalah.close"] = (
        True  # see kalah_service.ops.gworker: "Connection: close", then close
    )
    sock = request.environ.get("gunicorn.socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RD)
