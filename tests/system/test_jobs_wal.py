"""The embedded jobs store keeps its write-ahead log within its share (the jobs themselves
are never evicted): several processes creating and cancelling jobs as fast as they can grew
the log of a plain diskcache store to SQLite's own checkpoint size and beyond, since passive
checkpoints never restart a log other processes keep writing."""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from pathlib import Path
from typing import Any

from figures import measured

from kalah_service.base.config import load_settings
from kalah_service.jobs.embedded_jobs import EmbeddedJobStore
from kalah_service.jobs.items import parse_batch
from kalah_service.stores.walbound import WalBound

BOUND = 1024 * 1024
"""A small bound, so that its log share (a quarter) is passed many times over."""
JOBS = 120


def positions(writer: int, job: int) -> list[dict[str, Any]]:
    return [
        {"position": {"south": [i % 3, 1, 2], "north": [1, job % 3, 1], "stores": [i, writer]}}
        for i in range(8)
    ]


def write_jobs(folder: str, writer: int) -> None:
    settings = load_settings({}, environ={})
    store = EmbeddedJobStore(folder, ttl_s=600, wal_bound=BOUND)
    for job in range(JOBS):
        batch = parse_batch(settings, positions(writer, job), {"houses": 3, "seeds": 2})
        status = store.create(batch, 2, owner=f"w{writer}")
        store.cancel(status.id)


def test_processes_writing_jobs_keep_the_log_in_its_share(tmp_path: Path) -> None:
    folder = tmp_path / "answers-jobs"
    EmbeddedJobStore(folder, ttl_s=600, wal_bound=BOUND).store.close()  # created once
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=write_jobs, args=(str(folder), w)) for w in range(3)]
    for writer in writers:
        writer.start()
    wal = 0
    while any(w.is_alive() for w in writers):
        with contextlib.suppress(FileNotFoundError):
            wal = max(wal, (folder / "cache.db-wal").stat().st_size)
        time.sleep(0.002)
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    share = WalBound(folder, BOUND).wal_share
    store = EmbeddedJobStore(folder, ttl_s=600, wal_bound=BOUND)
    kept = sum(1 for key in store.store.iterkeys() if str(key).endswith(":meta"))
    measured(f"3 processes x {JOBS} jobs created and cancelled: jobs WAL peak {wal / 1e3:.0f} kB")
    # a writer that checked the log just before it filled adds its transaction: a few pages
    assert wal <= 2 * share, f"log peak {wal} bytes, share {share}"
    assert kept == 3 * JOBS  # every job kept: only the log is bounded
