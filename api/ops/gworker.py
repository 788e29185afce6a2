"""The gunicorn worker: ``gthread`` with a read timeout on client sockets.

A ``gthread`` worker hands a connection to one of its threads as soon as the first bytes
arrive; the thread then reads the headers and the body with a blocking socket and no time
limit, so a handful of clients that send half a request and stall hold every thread and the
service stops answering. Here the socket gets a timeout (``KALAH_CLIENT_TIMEOUT_S``) whenever
a thread takes it: a client silent that long while sending its request (or not reading its
answer) loses its connection and frees the thread. A client that trickles a byte now and
then is still only bounded by gunicorn's request size limits: in front of the public
internet, put a buffering proxy (nginx, a cloud load balancer) before gunicorn.

gunicorn answers what it refuses before the app sees a request (a request line above 4094
bytes: 414, headers too large: 431, a malformed request line or header: 400, an unknown
transfer coding: 501) with an HTML page of its own; :meth:`ThreadWorker.handle_error` makes
those answers problem+json like every other (see :func:`problem_bytes`).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.workers import gthread

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from gunicorn._types import _AddressType  # what gunicorn hands its workers as addresses
    from gunicorn.http import Request

CLIENT_TIMEOUT_S = float(os.environ.get("KALAH_CLIENT_TIMEOUT_S", "10"))


class _TimedConn(gthread.TConn):
    def init(self) -> None:
        super().init()
        # handle() made the socket blocking with no limit just before calling this
        self.sock.settimeout(CLIENT_TIMEOUT_S)


CLOSE = "kalah.close"
"""An environ flag the app sets when it answers without reading the whole body (a 413, a
stalled client, a large anonymous batch): the connection is then closed, and says so."""


def _closing(app: WSGIApplication) -> WSGIApplication:
    """``app``, whose answers say ``Connection: close`` (and close) when it set :data:`CLOSE`:
    gunicorn would otherwise say keep-alive and then close the connection anyway, or try to
    read the unread body as the next request. ``start_response`` is a method of gunicorn's
    response, whose ``force_close`` does that."""

    def wsgi(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        def start(
            status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
        ) -> Callable[[bytes], object]:
            force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
            if environ.get(CLOSE) and force_close is not None:
                force_close()
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return wsgi


_FIELDS: tuple[tuple[type[BaseException], str], ...] = (
    (http_errors.LimitRequestLine, "url"),
    (http_errors.InvalidRequestLine, "request-line"),
    (http_errors.InvalidRequestMethod, "method"),
    (http_errors.InvalidHTTPVersion, "http-version"),
    (http_errors.UnsupportedTransferCoding, "Transfer-Encoding"),
    (http_errors.ExpectationFailed, "Expect"),
    (http_errors.InvalidChunkSize, "body"),
    (http_errors.ChunkMissingTerminator, "body"),
    (http_errors.InvalidChunkExtension, "body"),
    (http_errors.LimitRequestHeaders, "headers"),
    (http_errors.InvalidHeader, "headers"),
    (http_errors.InvalidHeaderName, "headers"),
    (http_errors.ObsoleteFolding, "headers"),
)
"""The request part each of gunicorn's refusals is about (the problem's ``field``)."""

_DETAIL_CHARS = 240
_refused = threading.local()
"""The exception :meth:`ThreadWorker.handle_error` is answering, for :func:`_write_problem`
(gunicorn passes the writer only the status, reason and message); per thread."""


def problem_bytes(status: int, reason: str, detail: str, field: str | None) -> bytes:
    """A whole HTTP/1.1 answer (then the connection closes) with a problem+json body: what
    gunicorn itself sends for a request it refuses before the app sees it. The detail may
    quote the request (a bad header's name), so it is cut to 240 characters and JSON-escaped.
    """
    if len(detail) > _DETAIL_CHARS:
        detail = detail[: _DETAIL_CHARS - 1] + "\u2026"
    problem: dict[str, object] = {
        "type": "about:blank",
        "title": reason,
        "status": status,
        "detail": detail or reason,
    }
    if field is not None:
        problem["field"] = field
    body = json.dumps(problem).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/problem+json\r\n"
        "Cache-Control: no-store\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def _write_problem(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's ``util.write_error`` (an HTML page), answering problem+json instead."""
    error = getattr(_refused, "error", None)
    field = next((f for kind, f in _FIELDS if isinstance(error, kind)), None)
    if status_int >= 500 and error is not None and field is None:
        mesg = "an internal error occurred"  # gunicorn's own 500: no exception text
    util.write_nonblock(sock, problem_bytes(status_int, reason, mesg, field))


class ThreadWorker(gthread.ThreadWorker):
    """gthread, with :class:`_TimedConn` for every accepted connection and problem+json for
    gunicorn's own refusals."""

    def init_process(self) -> None:
        # gunicorn's Worker.handle_error writes its answer with util.write_error (looked up
        # at each call); in this worker process it writes problem+json.
        util.write_error = _write_problem
        super().init_process()

    def handle_error(
        self, req: Request | None, client: socket.socket, addr: _AddressType, exc: BaseException
    ) -> None:
        _refused.error = exc
        try:
            super().handle_error(req, client, addr, exc)
        finally:
            _refused.error = None

    def load_wsgi(self) -> None:
        super().load_wsgi()
        # types-gunicorn's WSGI app type has a start_response without PEP 3333's exc_info
        self.wsgi = _closing(self.wsgi)  # type: ignore[arg-type,assignment]

    def accept(self, listener: socket.socket) -> None:
        try:
            client_sock, client_addr = listener.accept()
            self.nr_conns += 1
            client_sock.setblocking(True)
            conn = _TimedConn(self.cfg, client_sock, client_addr, listener.getsockname())
            self.enqueue_req(conn)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
