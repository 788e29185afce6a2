"""Where every worker's charges are counted: one counter per caller and window, shared by
every process that serves the caller.

:class:`Counters` is the interface: :meth:`Counters.add` adds units to some windows at once
and reads back their totals and the time left in each (a window's counter starts at 0 and
expires at the window's end). Two backends:

- :class:`RedisCounters`, in the state store (shared by every worker and replica);
- :class:`EmbeddedCounters`, a SQLite file beside the embedded answer store (shared by every
  process of the machine: gunicorn's workers, and a worker respawned after a crash, which
  finds its callers' buckets as they were).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import redis

KEY_PREFIX = "kalah:rl"

Window = tuple[str, int, int]
"""(key, units to add, the window's length in seconds)."""


class Counters:
    """The interface of the shared counters."""

    errors: tuple[type[BaseException], ...] = ()
    """What the backend raises when it cannot be reached (each worker then counts alone)."""

    def add(self, windows: Sequence[Window]) -> list[tuple[int, float]]:
        """Add each window's units (a negative number takes units back) and return each
        window's (total, seconds until it ends), in order."""
        raise NotImplementedError


class RedisCounters(Counters):
    """Counters in Redis: one pipelined round trip for any number of windows."""

    errors = (redis.RedisError,)

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )

    def add(self, windows: Sequence[Window]) -> list[tuple[int, float]]:
        pipe = self.client.pipeline(transaction=False)
        for key, units, seconds in windows:
            pipe.set(key, 0, ex=seconds, nx=True)
            pipe.incrby(key, units)
            pipe.pttl(key)
        replies = pipe.execute()
        return [
            (int(replies[3 * i + 1]), max(int(replies[3 * i + 2]), 0) / 1000.0)
            for i in range(len(windows))
        ]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS windows (
    key TEXT PRIMARY KEY,
    total INTEGER NOT NULL,
    ends REAL NOT NULL
)
"""

_ADD = """
INSERT INTO windows (key, total, ends) VALUES (?1, ?2, ?3 + ?4)
ON CONFLICT (key) DO UPDATE SET
    total = CASE WHEN ends <= ?3 THEN ?2 ELSE total + ?2 END,
    ends = CASE WHEN ends <= ?3 THEN ?3 + ?4 ELSE ends END
RETURNING total, ends
"""


class EmbeddedCounters(Counters):
    """Counters in a SQLite file (WAL): each :meth:`add` is one transaction, so concurrent
    reservations from every process are counted exactly once."""

    errors = (sqlite3.OperationalError,)

    BUSY_TIMEOUT_S = 5.0

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._connection: tuple[int, sqlite3.Connection] | None = None
        self._lock = threading.Lock()
        self._last_sweep = 0.0

    def _connect(self) -> sqlite3.Connection:
        """This process's connection (a forked worker opens its own); call under the lock."""
        opened = self._connection
        if opened is None or opened[0] != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path,
                timeout=self.BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(_SCHEMA)
            opened = self._connection = (os.getpid(), connection)
        return opened[1]

    def add(self, windows: Sequence[Window]) -> list[tuple[int, float]]:
        now = time.time()
        with self._lock:
            connection = self._connect()
            connection.execute("BEGIN IMMEDIATE")
            try:
                rows = [
                    connection.execute(_ADD, (key, units, now, seconds)).fetchone()
                    for key, units, seconds in windows
                ]
                if now - self._last_sweep > 60:  # windows that ended long ago
                    connection.execute("DELETE FROM windows WHERE ends < ?", (now - 3600,))
                    self._last_sweep = now
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        return [(int(total), max(ends - now, 0.0)) for total, ends in rows]
