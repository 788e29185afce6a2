"""Issue 33, finding 11: with ``KALAH_CACHE_MB=1`` the embedded answer store's ``cache.db``
stayed at 1 MB but its ``cache.db-wal`` grew many times past it. The bound now counts the WAL
(and its shared-memory index), and checkpoints stay regular however busy the store is
(:mod:`kalah_service.stores.walbound`).

Many writes under a tiny bound, twice: four processes writing to the store as fast as they
can (the worst case), and a real gunicorn with two workers answering distinct analyses from
four clients. The store's files are measured throughout, not only at the end.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from figures import measured
from harness import Gunicorn

from kalah_service.stores.answers import Entry, Keys
from kalah_service.stores.embedded_answers import EmbeddedStore as EmbeddedCache

BOUND = 1024 * 1024
"""KALAH_CACHE_MB=1."""

FILES = ("cache.db", "cache.db-wal", "cache.db-shm")


def store_bytes(folder: Path) -> int:
    """What the store takes on disk: the database, its WAL and the WAL's index."""
    total = 0
    for name in FILES:
        with contextlib.suppress(FileNotFoundError):
            total += (folder / name).stat().st_size
    return total


def peak_while(running: Callable[[], bool], folder: Path) -> tuple[int, int]:
    """The largest size of the store and of its WAL seen while ``running()``."""
    peak = wal = 0
    while running():
        peak = max(peak, store_bytes(folder))
        with contextlib.suppress(FileNotFoundError):
            wal = max(wal, (folder / "cache.db-wal").stat().st_size)
        time.sleep(0.002)
    return peak, wal


def write_answers(folder: str, writer: int, count: int) -> None:
    store = EmbeddedCache(folder, size_mb=1, ttl_s=3600, lru_size=10)
    body = random.Random(writer).randbytes(1500).hex().encode()  # a large answer, 3 KB
    for i in range(count):
        keys = Keys(f"w{writer}:{i}:exact", f"w{writer}:{i}:limits", f"w{writer}:{i}:lock")
        store.put(keys, Entry(body, i % 2 == 0, 3))  # exact ones, and heuristic ones
        store.get(Keys(f"w{writer}:{i // 2}:exact", f"w{writer}:{i // 2}:limits", "-"))


def test_four_processes_writing_flat_out_stay_in_the_bound(tmp_path: Path) -> None:
    folder = tmp_path / "answers"
    EmbeddedCache(folder, size_mb=1, ttl_s=3600, lru_size=10).store.close()  # created once
    # Spawned, not forked: a fork copies the test process's other threads' locks as they are
    # (a runner thread of an earlier test's app inside SQLite left a child stuck in
    # sqlite3.connect for good, and the other writers waiting on its lock).
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=write_answers, args=(str(folder), w, 600)) for w in range(4)]
    for writer in writers:
        writer.start()
    peak, wal = peak_while(lambda: any(w.is_alive() for w in writers), folder)
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    final = store_bytes(folder)
    measured(
        f"4 processes x 600 answer writes, KALAH_CACHE_MB=1: store peak {peak / 1e6:.2f} MB "
        f"(WAL peak {wal / 1e6:.2f} MB), final {final / 1e6:.2f} MB"
    )
    assert peak <= BOUND, f"peak {peak} bytes, WAL peak {wal}"
    assert final <= BOUND


def positions(count: int) -> list[str]:
    """``count`` distinct Kalah(3,3) positions (compact), South to move."""
    found = []
    for houses in itertools.product(range(7), repeat=6):
        left = 18 - sum(houses)
        if left < 0:
            continue
        south = "".join(map(str, houses[:3]))
        north = "".join(map(str, houses[3:]))
        found.append(f"{south}-{left // 2}-{north}-{left - left // 2}-s")
    random.Random(11).shuffle(found)
    return found[:count]


def test_a_busy_server_keeps_its_store_in_the_bound(tmp_path: Path) -> None:
    folder = tmp_path / "answers"
    server = Gunicorn(
        {
            "KALAH_REDIS_URL": "",
            "KALAH_EGDB_PATH": "off",
            "KALAH_CACHE_DIR": str(folder),
            "KALAH_CACHE_MB": "1",
        }
    )
    base = server.start()
    todo = positions(2400)
    statuses: list[int] = []
    finished = threading.Event()

    def ask(position: str) -> None:
        params = {"position": position, "houses": 3, "seeds": 3, "time_ms": 50}
        statuses.append(requests.get(base + "/v1/analysis", params=params, timeout=60).status_code)

    def clients() -> None:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(ask, todo))
        finished.set()

    try:
        for position in todo[:20]:  # every worker has opened the store
            ask(position)
        sender = threading.Thread(target=clients, daemon=True)
        sender.start()
        peak, wal = peak_while(lambda: not finished.is_set(), folder)
        sender.join(600)
        final = store_bytes(folder)
    finally:
        server.close()
    measured(
        f"gunicorn, 2 workers, 4 clients, {len(statuses)} analyses, KALAH_CACHE_MB=1: "
        f"store peak {peak / 1e6:.2f} MB (WAL peak {wal / 1e6:.2f} MB), final {final / 1e6:.2f} MB"
    )
    assert set(statuses) == {200} and len(statuses) == len(todo) + 20
    assert peak <= BOUND, f"peak {peak} bytes, WAL peak {wal}"
    assert final <= BOUND
    assert os.path.exists(folder / "checkpoint.lock")
