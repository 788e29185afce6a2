"""The rate limits' counters without Redis: :class:`EmbeddedCounters`, a SQLite file beside
the embedded answer store, shared by every process of the machine."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from .counters import KEY_PREFIX, Counters, Limit, Totals, Window

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
