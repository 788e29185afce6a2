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


class ThreadWorker(gthread.ThreadWorker):  # type: ignore[misc]
    """gthread, with :class:`_TimedConn` for every accepted connection."""

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
