"""The embedded answer store: one bounded cache on disk shared by every process of a machine.

Without Redis every gunicorn worker (and ``kalah analyse``) reads and writes one SQLite
database through ``diskcache``, in ``<cache folder>/answers`` (``KALAH_CACHE_DIR``), beside
the endgame databases. Why diskcache: SQLite in WAL mode is safe across processes and threads
with no server to run, survives restarts, and diskcache adds what a cache needs on top —
a size bound with eviction, per-key expiry, atomic ``add`` for locks — in a well-kept pure
Python package. LMDB would read faster but has a fixed map size, no expiry and no eviction,
all of which we would have to write.

- Exact answers never expire (they only leave when the size bound evicts the oldest stored,
  ``least-recently-stored``: reads never write); heuristic ones expire after
  ``KALAH_CACHE_TTL_S`` and are replaced only by a deeper one.
- One search per key across processes: the key's lock is an atomic ``add`` with a short
  renewed lease, under the single-flight of :class:`~.answers.AnswerStore` (as with Redis).
- An in-process LRU of exact answers sits in front (immutable, so never stale).
- The store is opened per process, after gunicorn forks (SQLite handles do not survive one).
- The cache is optional (docs/deploy.md, "Store faults"): a store that fails (a full disk, a
  corrupt file, a lock held too long) is a miss and a skipped write, never an error of the
  request; ``ping`` (``/readyz``) then says so, and reopens the store for the next try.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

import diskcache

from .answers import AnswerStore, Entry, Keys, Lru
from .walbound import BoundedCache, WalBound

log = logging.getLogger(__name__)

PROBE_KEY = "kalah:v1:probe"
"""What ``ping`` writes to learn whether the store takes writes."""

SQLITE_TIMEOUT_S = 5
"""How long a writer waits for SQLite's lock before diskcache gives up (a miss then)."""


class EmbeddedStore(AnswerStore):
    """diskcache on the local disk, shared by every process; an LRU of exact entries in front."""

    backend = "embedded"

    errors = (diskcache.Timeout, sqlite3.Error, OSError)
    """A lock held too long, a full disk (``OperationalError``), a corrupt file
    (``DatabaseError``), a folder that cannot be made: each a miss."""

    def __init__(
        self, directory: str | os.PathLike[str], *, size_mb: int, ttl_s: float, lru_size: int
    ) -> None:
        self.directory = Path(directory)
        self.size_limit = size_mb * 1024 * 1024
        self.wal_bound = WalBound(self.directory, self.size_limit)  # the WAL counts too
        self.ttl_s = ttl_s
        self._memory = Lru(lru_size)
        self._store: tuple[int, diskcache.Cache] | None = None
        self._open_lock = threading.Lock()

    @property
    def store(self) -> diskcache.Cache:
        """This process's handle (a forked child opens its own)."""
        opened = self._store
        if opened is None or opened[0] != os.getpid():
            with self._open_lock:
                opened = self._store
                if opened is None or opened[0] != os.getpid():
                    self.directory.mkdir(parents=True, exist_ok=True)
                    cache = BoundedCache(  # the bound counts the WAL: .walbound
                        str(self.directory),
                        bound=self.wal_bound,
                        eviction_policy="least-recently-stored",
                        timeout=SQLITE_TIMEOUT_S,
                    )
                    opened = self._store = (os.getpid(), cache)
        return opened[1]

    def lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        entry = self._memory.get(keys.exact)
        if entry is not None:
            return entry, "memory"
        try:
            return self._lookup(keys)
        except self.errors as error:
            self.failed(error)
            return None, "embedded"

    def _lookup(self, keys: Keys) -> tuple[Entry | None, str]:
        store = self.store
        raw: bytes | None = store.get(keys.exact)
        if raw is not None:
            entry = Entry.decode(raw)
            self._memory.put(keys.exact, entry, None)
            return entry, "embedded"
        raw = store.get(keys.limits)
        return (Entry.decode(raw) if raw is not None else None), "embedded"

    def put(self, keys: Keys, entry: Entry) -> None:
        if entry.exact:
            self._memory.put(keys.exact, entry, None)
        try:
            self._put(keys, entry)
        except self.errors as error:  # the answer is served all the same, uncached
            self.failed(error)

    def _put(self, keys: Keys, entry: Entry) -> None:
        store = self.store
        if entry.exact:
            store.set(keys.exact, entry.encode())
            return
        with store.transact():  # replace a live heuristic entry only by a deeper one
            old: bytes | None = store.get(keys.limits)
            if old is not None and (Entry.decode(old).depth or 0) > (entry.depth or 0):
                return
            store.set(keys.limits, entry.encode(), expire=self.ttl_s)

    def ping(self) -> tuple[bool, str]:
        """Whether the store can be read and written now (a write probe: a full disk still
        reads)."""
        try:
            store = self.store
            store.set(PROBE_KEY, b"1", expire=60)
            count = len(store)
        except Exception as error:  # reported by /readyz (without the path), never raised
            log.warning("embedded store %s unusable: %s", self.directory, error)
            self._store = None  # a repaired or replaced file is opened afresh
            return False, "embedded store unusable (the server log has the error)"
        return True, f"embedded store: {count} entries"

    def size(self) -> int | None:
        try:
            return len(self.store)
        except self.errors as error:
            self.failed(error)
            return None

    # -- locks -----------------------------------------------------------------------------

    def take_lock(self, lock: str, token: str, lease_s: float) -> bool:
        return bool(self.store.add(lock, token, expire=lease_s))

    def lock_holder(self, lock: str) -> bytes | str | None:
        holder: object = self.store.get(lock)
        return holder if isinstance(holder, str | bytes) else None

    def renew_lock(self, lock: str, token: str, lease_s: float) -> None:
        store = self.store
        with store.transact():
            if store.get(lock) == token:
                store.touch(lock, expire=lease_s)

    def release_lock(self, lock: str, token: bytes | str) -> None:
        store = self.store
        with store.transact():
            if store.get(lock) == token:
                store.delete(lock)
