"""``kalah worker``: runs the chunks of batch jobs from the state Redis, with a warm engine
(and the boards of books built on the workers, :mod:`.work`).

The chunks run in this process (no fork per chunk), so the engine, its transposition table
and the memory-mapped endgame databases stay warm from one chunk to the next. Each task goes
through the ``/v1/analysis`` code path (:func:`kalah_service.jobs.runner.answer_one`) with the same
cache (Redis, shared with the API): a position the cache or another worker already answered
is not searched again. The loop is :func:`kalah_service.jobs.runner.serve` over the
:class:`~kalah_service.jobs.redis_jobs.RedisJobStore`; a thread beats every second (``/readyz`` and
the API count the workers alive: without one, a new job is refused). Any Redis error (lost,
timing out, out of memory) is waited out, and the worker goes on where it was. Any number of
workers on any number of machines may join by pointing ``KALAH_REDIS_URL`` at the same Redis.

SIGTERM or SIGINT: the chunk in hand is finished, then the worker exits; a second signal
stops it after the current search (the chunk is then taken over by another worker).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from types import FrameType

import redis

from ..base.config import Settings, load_settings
from ..core.analyser import Analyser
from ..ratelimit.buckets import Buckets
from ..stores.lease import owner_token
from .redis_jobs import WORKER_BEAT_S
from .runner import PAUSE_MAX_S, PAUSE_S, beating, serve
from .store import JobStore

log = logging.getLogger(__name__)


Connect = Callable[[Settings], tuple[Analyser, JobStore, Buckets]]
"""Builds a worker's analyser, job store and buckets from the settings (the commands pass
:func:`kalah_service.ops.backends.worker_backends`)."""


def run_worker(connect: Connect, *, burst: bool = False, name: str | None = None) -> int:
    """Run chunks until stopped (or, with ``burst``, until no chunk waits or runs)."""
    logging.basicConfig(
        level=os.environ.get("KALAH_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    settings = load_settings()
    pause = PAUSE_S
    while True:  # a state store not up yet (a deployment starting) is waited for
        try:
            analyser, store, buckets = connect(settings)
            break
        except (redis.ConnectionError, redis.TimeoutError) as error:
            log.warning("the state store is unreachable (%s); trying again in %.1f s", error, pause)
            time.sleep(pause)
            pause = min(2 * pause, PAUSE_MAX_S)
    analyser.self_test()
    # The engine and its databases before the first chunk (a worker searches one at a time).
    with analyser.engines().engine(analyser.settings.default_time_ms):
        pass
    me = name or f"{socket.gethostname()}:{os.getpid()}"
    stop, hard = threading.Event(), threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            hard.set()
        stop.set()
        log.warning("worker %s stopping (signal %d)", me, signum)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    with beating(store, me, WORKER_BEAT_S):
        serve(
            store,
            analyser,
            worker=f"{me}/{owner_token()}",  # the lease token: unique even if names repeat
            stop=stop,
            bill=buckets.charge_later,
            burst=burst,
            hard_stop=hard,
        )
    return 0
