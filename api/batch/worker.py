"""``kalah worker``: an RQ worker for batch chunks, with a warm engine and a reaper.

It is RQ's :class:`~rq.SimpleWorker` (jobs run in this process, no fork per job), so the
engine, its transposition table and the memory-mapped endgame databases stay warm from one
chunk to the next. Each task goes through :meth:`Analyser.analyse`, the code path of
``/v1/analysis`` with the same cache (Redis, shared with the API): a position the cache or
another worker already answered is not searched again. A thread re-queues the chunks of dead
workers (:meth:`JobStore.reap`) and beats every second (:meth:`JobStore.beat`: ``/readyz``
and the jobs' answers say when no worker is alive). Any number of workers on any number of
machines may join by pointing ``KALAH_REDIS_URL`` at the same Redis.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import socket
import threading
import time
from types import FrameType

import redis

from ..config import Settings, load_settings
from ..core.analyser import Analyser
from ..state import check_state_store, make_state_client
from ..store import make_store
from .jobs import REAP_EVERY_S, WORKER_BEAT_S, JobStore, job_store

log = logging.getLogger("api.batch.worker")

_STATE: list[tuple[Analyser, JobStore]] = []

OUTAGE_PAUSE_S = 0.5
OUTAGE_PAUSE_MAX_S = 5.0
"""After losing Redis, a worker tries again after this pause, doubling up to the maximum."""


def _state() -> tuple[Analyser, JobStore]:
    if not _STATE:
        settings = load_settings()
        if not settings.state_url:
            raise RuntimeError(
                "kalah worker needs KALAH_STATE_REDIS_URL or KALAH_REDIS_URL (the API's)"
            )
        _STATE.append(_make_state(settings))
    return _STATE[0]


def _make_state(settings: Settings) -> tuple[Analyser, JobStore]:
    assert settings.state_url
    check_state_store(make_state_client(settings.state_url, timeout_s=2.0))
    cache = make_store(settings, max_connections=4)
    return Analyser(settings, cache), job_store(settings)


def run_ticket() -> int:
    """RQ's entry point: run the next chunk of the next owner in the ring (owners are served
    round-robin, see :mod:`.jobs`); returns the tasks answered."""
    _, store = _state()
    taken = store.take()
    return 0 if taken is None else run_chunk(*taken)


def run_chunk(job_id: str, n: int) -> int:
    """Compute chunk ``n`` of job ``job_id``; returns the tasks answered."""
    analyser, store = _state()
    token = f"{socket.gethostname()}:{os.getpid()}"
    tasks = store.begin_chunk(job_id, n, token)
    if tasks is None:
        return 0
    answers: list[tuple[int, bytes]] = []
    with store.heartbeat(job_id, n, token):
        for index, task in tasks:
            answers.append((index, analyser.analyse_item(task)))
    store.complete_chunk(job_id, n, answers)
    return len(answers)


def run_worker(*, burst: bool = False, name: str | None = None) -> int:
    """Serve the batch queue until stopped (or, with ``burst``, until it is empty)."""
    from rq import SimpleWorker

    analyser, store = _state()
    analyser.self_test()
    # The engine and its databases before the first chunk (a worker searches one at a time).
    with analyser.engines().engine(analyser.settings.default_time_ms):
        pass
    stop = threading.Event()
    me = f"{socket.gethostname()}:{os.getpid()}"

    def beat() -> None:
        try:
            store.beat(me)  # /readyz and the jobs' answers count the workers alive
        except redis.RedisError as error:  # a Redis hiccup: the next beat tries again
            log.warning("worker heartbeat failed: %s", error)

    def reaper() -> None:
        beat()
        while not stop.wait(min(REAP_EVERY_S, WORKER_BEAT_S)):
            beat()
            try:
                store.reap()
                store.reissue()
            except Exception:  # a Redis hiccup: try again next round
                log.exception("reaper round failed")

    threading.Thread(target=reaper, name="reaper", daemon=True).start()
    level = os.environ.get("KALAH_LOG_LEVEL", "INFO").upper()
    pause = OUTAGE_PAUSE_S

    class Worker(SimpleWorker):
        """RQ's worker, remembering whether it was asked to stop (SIGTERM, SIGINT)."""

        stop_requested = False

        def request_stop(self, signum: int, frame: FrameType | None) -> None:
            self.stop_requested = True
            super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    try:
        for attempt in itertools.count():
            # A new RQ worker after an outage; this process, its warm engine and its databases
            # stay. RQ's own loop gives up on a lost connection: it raises, or it logs the error
            # and returns as if it had been stopped. A chunk cut off by the outage is re-queued
            # by a reaper once its lease lapses, a ticket lost with it issued again.
            try:
                if burst:
                    store.reissue()
                worker = Worker(
                    [store.queue],
                    connection=store.redis,
                    name=name if attempt == 0 or name is None else f"{name}-{attempt}",
                )
                worker.work(burst=burst, logging_level=level)
                if worker.stop_requested or (burst and not store.waiting()):
                    return 0
                log.warning("RQ's worker quit unasked; a new one in %.1f s", pause)
            except (redis.ConnectionError, redis.TimeoutError) as error:
                log.warning("Redis unreachable (%s); trying again in %.1f s", error, pause)
            time.sleep(pause)
            pause = min(2 * pause, OUTAGE_PAUSE_MAX_S)
    finally:
        stop.set()
        with contextlib.suppress(redis.RedisError):  # else it goes stale by itself
            store.leave(me)
    return 0  # pragma: no cover - the loop returns
