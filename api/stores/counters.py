"""Where every worker's charges are counted: one counter per caller and window, shared by
every process that serves the caller.

:class:`Counters` is the interface: :meth:`Counters.add` adds units to some windows at once
and reads back their totals and the time left in each (a window's counter starts at 0 and
expires at the window's end). Two backends:

- :class:`RedisCounters`, in the state store (shared by every worker and replica);
- :class:`EmbeddedCounters`, a SQLite file beside the embedded answer store (shared by every
  process of the machine: gunicorn's workers, and a worker respawned after a crash, which
  finds its callers' buckets as they were).

A backend that fails (Redis down or answering errors, a full disk, a corrupt file) raises one
of its :attr:`Counters.errors`; :mod:`.buckets` then refuses limited requests with a 503 until
the counters answer again (docs/deploy.md, "Store faults").
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import redis

KEY_PREFIX = "kalah:rl"

Window = tuple[str, int, int]
"""(key, units to add, the window's length in seconds)."""

Limit = tuple[str, int, int]
"""(key, the window's length in seconds, the most its total may reach)."""

Totals = list[tuple[int, float]]
"""Each window's (total, seconds until it ends), in order."""


class Counters:
    """The interface of the shared counters."""

    errors: tuple[type[BaseException], ...] = ()
    """What the backend raises when it fails (limited requests are then refused, a 503)."""

    def probe(self) -> None:
        """Write to the counters (``/readyz``): raises one of :attr:`errors` when that fails."""
        raise NotImplementedError

    def add(self, windows: Sequence[Window]) -> Totals:
        """Add each window's units (a negative number takes units back) and return each
        window's total and the time left in it."""
        raise NotImplementedError

    def reserve(self, limits: Sequence[Limit], units: int) -> tuple[int | None, Totals]:
        """Add ``units`` to every window at once if each total stays within its limit, else
        to none: (the index of the first window that cannot hold them or None, the totals
        after). Atomic: no other worker ever sees units that are then taken back."""
        raise NotImplementedError


# KEYS: the windows; ARGV: units, then each window's limit and length in seconds.
_RESERVE = """
local units = tonumber(ARGV[1])
local refused = 0
for i, key in ipairs(KEYS) do
  redis.call('SET', key, 0, 'EX', ARGV[2 * i + 1], 'NX')
  if refused == 0 and tonumber(redis.call('GET', key)) + units > tonumber(ARGV[2 * i]) then
    refused = i
  end
end
local out = {refused}
for _, key in ipairs(KEYS) do
  if refused == 0 then
    table.insert(out, redis.call('INCRBY', key, units))
  else
    table.insert(out, tonumber(redis.call('GET', key)))
  end
  table.insert(out, redis.call('PTTL', key))
end
return out
"""


class RedisCounters(Counters):
    """Counters in Redis: one round trip for any number of windows."""

    errors = (redis.RedisError, OSError)

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self._reserve = self.client.register_script(_RESERVE)

    def probe(self) -> None:
        self.client.set(f"{KEY_PREFIX}:probe", 0, ex=60)  # a write: an OOM Redis still pings

    def reserve(self, limits: Sequence[Limit], units: int) -> tuple[int | None, Totals]:
        args: list[int] = [units]
        for _, seconds, limit in limits:
            args += [limit, seconds]
        reply = self._reserve(keys=[key for key, _, _ in limits], args=args)
        refused = int(reply[0]) - 1
        totals = [
            (int(reply[1 + 2 * i]), max(int(reply[2 + 2 * i]), 0) / 1000.0)
            for i in range(len(limits))
        ]
        return (refused if refused >= 0 else None), totals

    def add(self, windows: Sequence[Window]) -> Totals:
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

    errors = (sqlite3.Error, OSError)
    """A lock held too long or a full disk (``OperationalError``), a corrupt file
    (``DatabaseError``), a folder that cannot be made."""

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

    def probe(self) -> None:
        with self._transaction() as connection:
            connection.execute(_ADD, (f"{KEY_PREFIX}:probe", 0, time.time(), 60)).fetchone()

    def add(self, windows: Sequence[Window]) -> Totals:
        now = time.time()
        with self._transaction() as connection:
            rows = [
                connection.execute(_ADD, (key, units, now, seconds)).fetchone()
                for key, units, seconds in windows
            ]
        return [(int(total), max(ends - now, 0.0)) for total, ends in rows]

    def reserve(self, limits: Sequence[Limit], units: int) -> tuple[int | None, Totals]:
        now = time.time()
        with self._transaction() as connection:
            rows = [  # each window as it is (made, or rolled over if it ended)
                connection.execute(_ADD, (key, 0, now, seconds)).fetchone()
                for key, seconds, _ in limits
            ]
            refused = next(
                (
                    i
                    for i, (row, limit) in enumerate(zip(rows, limits, strict=True))
                    if row[0] + units > limit[2]
                ),
                None,
            )
            if refused is None:
                rows = [
                    connection.execute(_ADD, (key, units, now, seconds)).fetchone()
                    for key, seconds, _ in limits
                ]
        return refused, [(int(total), max(ends - now, 0.0)) for total, ends in rows]

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (every process waits its turn: SQLite's write lock)."""
        now = time.time()
        with self._lock:
            try:
                connection = self._connect()
                connection.execute("BEGIN IMMEDIATE")
            except self.errors:
                self._drop()
                raise
            try:
                yield connection
                if now - self._last_sweep > 60:  # windows that ended long ago
                    connection.execute("DELETE FROM windows WHERE ends < ?", (now - 3600,))
                    self._last_sweep = now
                connection.execute("COMMIT")
            except BaseException as error:
                with suppress(sqlite3.Error):  # none left to roll back (a failed COMMIT ends it)
                    connection.execute("ROLLBACK")
                if isinstance(error, self.errors):
                    self._drop()
                raise

    def _drop(self) -> None:
        """Forget a connection that failed: the next transaction opens the file afresh (a
        repaired or replaced file is used again)."""
        opened, self._connection = self._connection, None
        if opened is not None and opened[0] == os.getpid():
            with suppress(sqlite3.Error):
                opened[1].close()
