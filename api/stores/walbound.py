"""The embedded answer store's size bound, its SQLite write-ahead log included.

diskcache bounds what its database holds (``size_limit``: the database's pages plus any value
files), but SQLite in WAL mode writes every change to ``cache.db-wal`` first and copies it back
at checkpoints. The automatic checkpoints are passive, and with several processes writing in
turn the log is never started over, and grows far past the bound whatever the bound is;
without ``journal_size_limit`` it never shrinks either (the figures: HISTORY.md).

Here the bound covers the three files:

- the WAL gets a share of it (a quarter, at most 16 MiB); the database the rest, less room for
  the WAL's shared-memory index (``cache.db-shm``) and a sixteenth of slack (diskcache evicts
  once the database has passed its limit);
- a writer (any thread of any process) that finds the log past half its share, before or
  after its write, runs a ``TRUNCATE`` checkpoint, which copies the log back and empties it.
  It holds a lock file beside the store (``checkpoint.lock``) exclusively while it does, and
  every write transaction holds it shared (:class:`BoundedCache`): so no write is in flight
  during a checkpoint (SQLite fails writers at once, rather than making them wait, while a
  ``TRUNCATE`` checkpoint is pending, and diskcache turns that into an error), writers never
  wait for each other here, and readers are brief. Writers that see a full log queue for the
  exclusive lock instead of the shared one, so a stream of writers cannot starve the
  checkpoint. Checkpoints are thus regular however busy the store is: one every half share of
  log (at the default 512 MiB bound, every 8 MiB of writes; each costs an fsync);
- SQLite's own passive checkpoints run only past the whole share (``wal_autocheckpoint``: a
  ``TRUNCATE`` checkpoint asked for while one of those runs fails at once), and it truncates
  the log when it starts it over (``journal_size_limit``).

The locks are ``flock``s: a process killed holding one loses it with its descriptor.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import diskcache

WAL_SHARE_MAX = 16 * 1024 * 1024
"""The most of the bound the WAL gets (a quarter of it below 64 MiB)."""

SHM_BYTES = 64 * 1024
"""Room for the WAL's shared-memory index (32 KiB per 4096 log pages)."""

PAGE_BYTES = 4096
"""SQLite's default page size, which diskcache keeps."""

CHECKPOINT_WAIT_S = 0.5
"""How long a TRUNCATE checkpoint waits for writers and readers before giving up."""


class WalBound:
    """Splits a size bound between a diskcache store and its WAL and keeps the WAL in its
    share (see the module docstring). One per store and process."""

    def __init__(self, directory: str | os.PathLike[str], bound_bytes: int) -> None:
        self.wal = Path(directory) / "cache.db-wal"
        self.database = Path(directory) / "cache.db"
        self.lock_path = Path(directory) / "checkpoint.lock"
        self.wal_share = min(bound_bytes // 4, WAL_SHARE_MAX)
        self.trigger = self.wal_share // 2
        # less a sixteenth: the database passes its limit a little before diskcache culls
        slack = bound_bytes // 16
        self.db_limit = max(PAGE_BYTES * 16, bound_bytes - self.wal_share - SHM_BYTES - slack)
        self._local = threading.local()  # per thread: its lock file descriptor and depth
        self._checkpointing = threading.Lock()
        self._connection: tuple[int, sqlite3.Connection] | None = None
        self.checkpoints = 0
        """TRUNCATE checkpoints this process ran to completion."""

    def settings(self) -> dict[str, Any]:
        """diskcache settings: its bound and the pragmas applied to each of its connections."""
        return {
            "size_limit": self.db_limit,
            "sqlite_journal_size_limit": self.trigger,
            # SQLite's passive checkpoints only past the whole share: a TRUNCATE checkpoint
            # asked for while one of those runs fails at once instead of waiting its turn
            "sqlite_wal_autocheckpoint": max(1, self.wal_share // PAGE_BYTES),
        }

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """A write transaction (nested ones count once): it holds the lock file shared, so
        writers never wait for each other here, only for a checkpoint; after the outermost
        one, a checkpoint if the log is past half its share."""
        local = self._local
        depth: int = getattr(local, "depth", 0)
        if depth:
            local.depth = depth + 1
            try:
                yield
            finally:
                local.depth = depth
            return
        descriptor = self._descriptor()
        # A log past its share is emptied before anyone writes more: the writers that see it
        # queue for the exclusive lock rather than the shared one, so the checkpoint is not
        # starved by a stream of writers (flock prefers neither).
        self._checkpoint_if_full(descriptor)
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        local.depth = 1
        try:
            yield
        finally:
            local.depth = 0
            fcntl.flock(descriptor, fcntl.LOCK_UN)
        self._checkpoint_if_full(descriptor)

    def _checkpoint_if_full(self, descriptor: int) -> None:
        try:
            if self.wal.stat().st_size <= self.trigger:
                return
        except OSError:
            return
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # no write is in flight while it holds
            try:
                if self.wal.stat().st_size <= self.trigger:
                    return  # another thread or process has just emptied it
                with self._checkpointing:  # the process's one connection for checkpoints
                    busy, _, _ = (
                        self._sqlite().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    )
                if not busy:
                    self.checkpoints += 1
            finally:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
        except (OSError, sqlite3.Error):
            pass  # the next write tries again

    def _descriptor(self) -> int:
        """This thread's own descriptor of the lock file: flocks belong to an open file, so
        the threads of a process must not share one (nor survive a fork)."""
        local = self._local
        opened: tuple[int, int] | None = getattr(local, "descriptor", None)
        if opened is None or opened[0] != os.getpid():
            opened = (os.getpid(), os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600))
            local.descriptor = opened
        return opened[1]

    def _sqlite(self) -> sqlite3.Connection:
        """This process's connection for checkpoints (none survives a fork)."""
        opened = self._connection
        if opened is None or opened[0] != os.getpid():
            connection = sqlite3.connect(
                str(self.database),
                timeout=CHECKPOINT_WAIT_S,
                isolation_level=None,
                check_same_thread=False,
            )
            opened = self._connection = (os.getpid(), connection)
        return opened[1]


class BoundedCache(diskcache.Cache):
    """A diskcache store whose every write transaction (``set``, ``add``, ``touch``,
    ``delete``, ``transact`` ... all go through ``_transact``) runs under
    :meth:`WalBound.writing`."""

    def __init__(self, directory: str, *, bound: WalBound, **settings: Any) -> None:
        self.wal_bound = bound
        with bound.writing():  # opening writes its settings, a transaction each
            super().__init__(directory, **bound.settings(), **settings)

    @contextlib.contextmanager
    def _transact(self, retry: bool = False, filename: str | None = None) -> Iterator[Any]:
        transact = super()._transact  # type: ignore[misc]  # diskcache's, not in its stubs
        with self.wal_bound.writing(), transact(retry, filename) as transaction:
            yield transaction
