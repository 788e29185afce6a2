"""The gunicorn worker: ``gthread`` with a read timeout on client sockets.

A ``gthread`` worker hands a connection to one of its threads as soon as the first bytes
arrive; the thread then reads the headers and the body with a blocking socket and no time
limit, so a handful of clients that send half a request and stall hold every thread and the
service stops answering. Here the socket gets a timeout (``KALAH_CLIENT_TIMEOUT_S``) whenever
a thread takes it: a client silent that long while sending its request (or not reading its
answer) loses its connection and frees the thread. A client that trickles a byte now and
then is still only bounded by gunicorn's request size limits: in front of the public
internet, put a buffering proxy (nginx, a cloud load balancer) before gunicorn.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from gunicorn.workers import gthread  # type: ignore[import-untyped]

CLIENT_TIMEOUT_S = float(os.environ.get("KALAH_CLIENT_TIMEOUT_S", "10"))


class _TimedConn(gthread.TConn):  # type: ignore[misc]
    def init(self) -> None:
        super().init()
        # handle() made the socket blocking with no limit just before calling this
        self.sock.settimeout(CLIENT_TIMEOUT_S)


CLOSE = "kalah.close"
"""An environ flag the app sets when it answers without reading the whole body (a 413, a
stalled client, a large anonymous batch): the connection is then closed, and says so."""


def _closing(app: Any) -> Any:
    """``app``, whose answers say ``Connection: close`` (and close) when it set :data:`CLOSE`:
    gunicorn would otherwise say keep-alive and then close the connection anyway, or try to
    read the unread body as the next request. ``start_response`` is a method of gunicorn's
    response, whose ``force_close`` does that."""

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
            if environ.get(CLOSE) and force_close is not None:
                force_close()
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return wsgi


class ThreadWorker(gthread.ThreadWorker):  # type: ignore[misc]
    """gthread, with :class:`_TimedConn` for every accepted connection."""

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi: Any = _closing(self.wsgi)

    def accept(self, listener: Any) -> None:
        try:
            client_sock, client_addr = listener.accept()
            self.nr_conns += 1
            client_sock.setblocking(True)
            conn = _TimedConn(self.cfg, client_sock, client_addr, listener.getsockname())
            self.enqueue_req(conn)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
