"""Engine work on the batch workers: ``kalah book build --redis-url`` through the job queue.

:class:`RedisExecutor` is a :class:`kalah_core.tasks.Executor` (found by the engine through
the ``kalah.executors`` entry point ``redis``, since the engine never imports the service).
It posts a task's items as one job of the :class:`~.redis_jobs.RedisJobStore` (the same
chunks, fair queue and leases as ``POST /v1/batch`` jobs; the owner ``book-build``, charged to
nobody), and yields each item's result as a ``kalah worker`` stores it (:func:`.runner.run_work`):

- any number of workers on any number of machines take its chunks, each running the task's
  function with its own warm engine (:func:`kalah_core.tasks.run`);
- a worker killed mid-chunk costs the item in hand: its lease lapses (5 s), the next worker
  takes the chunk over and skips the items already answered;
- the poster (the book build) keeps its checkpoint files as the results come, so it resumes
  from them when killed; when stopped (a deadline, Ctrl-C, SIGTERM), it cancels the job and
  deletes its keys; killed hard, its job is cancelled once it has not read its results for a
  minute (:data:`~.redis_jobs.POSTER_LEASE_MS`), and its keys expire after :data:`TTL_S`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
from collections.abc import Generator, Iterator, Sequence
from typing import TextIO

import redis

from kalah_core.errors import KalahError
from kalah_core.tasks import STEAL_BELOW_S, Json, Session, Task, group_of

from .redis_jobs import RedisJobStore
from .runner import PAUSE_MAX_S, PAUSE_S

log = logging.getLogger(__name__)

OWNER = "book-build"
"""The owner of engine-work jobs in the fair queue (API keys' jobs take turns with them)."""
TTL_S = 7 * 86400
"""How long an engine-work job's keys live after its last change."""
NO_WORKER_EVERY_S = 30.0
"""How often a poster waiting with no worker alive says so."""
WORKERS_EVERY_S = 5.0
"""How often a session counts the workers alive (its capacity)."""


class RedisExecutor:
    """Runs tasks on the ``kalah worker`` processes of the Redis at ``url`` (the workers' job
    store: their ``KALAH_STATE_REDIS_URL``, else ``KALAH_REDIS_URL``)."""

    def __init__(self, url: str, *, stream: TextIO | None = None, poll_s: float = 1.0) -> None:
        self.url = url
        self.store = RedisJobStore(url, ttl_s=TTL_S)
        self.stream = stream or sys.stderr
        self.poll_s = poll_s

    @contextlib.contextmanager
    def _session(self, work: Task) -> Iterator[Session]:
        session = RedisSession(self, work)
        try:
            yield session
        finally:
            session.close()

    def session(self, work: Task) -> contextlib.AbstractContextManager[Session]:
        """Items one at a time on the workers (:class:`RedisSession`)."""
        return self._session(work)

    def map(
        self, work: Task, items: Sequence[Json], chunk: int
    ) -> Generator[list[tuple[int, Json]], None, None]:
        store = self.store
        try:
            job = store.create_work(work, items, chunk, OWNER, ttl_s=TTL_S)
            alive = store.workers()
        except redis.RedisError as error:
            raise KalahError(f"the workers' Redis at {self.url}: {error}") from None
        self.stream.write(
            f"  job {job}: {len(items):,} items in chunks of {chunk} for the kalah workers "
            f"of {self.url} ({alive} alive)\n"
        )
        seen: set[int] = set()
        quiet_since = time.monotonic()
        finished = 0  # polls that found the job finished and no new result
        pause = PAUSE_S
        try:
            while len(seen) < len(items):
                try:
                    batch = [(i, body) for i, body in store.feed(job, self.poll_s) if i not in seen]
                    status = None if batch else store.status(job)
                except redis.RedisError as error:  # waited out (a minute: the job is cancelled)
                    self.stream.write(f"  job {job}: Redis: {error}; again in {pause:.1f} s\n")
                    time.sleep(pause)
                    pause = min(2 * pause, PAUSE_MAX_S)
                    yield []
                    continue
                pause = PAUSE_S
                if batch:
                    finished = 0
                    seen.update(i for i, _ in batch)
                    quiet_since = time.monotonic()
                    yield [(i, json.loads(body)) for i, body in batch]
                    continue
                if status is None:
                    raise RuntimeError(f"job {job} is gone from {self.url} (expired, or deleted)")
                if status.status in ("failed", "cancelled"):
                    raise RuntimeError(f"job {job} {status.status}: {status.error or ''}".strip())
                if status.status == "finished":  # its last results may be on their way
                    finished += 1
                    if finished > 1:
                        missing = len(items) - len(seen)
                        raise RuntimeError(f"job {job} finished without {missing} results")
                yield []  # nothing yet: the caller may look at its clock (--minutes)
                if time.monotonic() - quiet_since > NO_WORKER_EVERY_S:
                    quiet_since = time.monotonic()
                    if not store.workers():
                        self.stream.write(
                            f"  job {job}: waiting, no kalah worker alive on {self.url}\n"
                        )
                        self.stream.flush()
        finally:
            with contextlib.suppress(redis.RedisError):  # else cancelled a minute later
                if len(seen) < len(items):
                    store.cancel(job)
                store.forget(job)


class RedisSession:
    """A :class:`kalah_core.tasks.Session` on the ``kalah worker`` processes: each item one
    job (one chunk), so that any free worker takes the next and a cancelled one is stopped by
    itself. Its capacity is the workers alive (at least 1), looked at again every
    :data:`WORKERS_EVERY_S`.

    Items of a group (:func:`kalah_core.tasks.group_of`: a warm proof's move, whose tree its
    worker's table holds) keep to their worker, as a local session's do: once a group's items
    have run for :data:`~kalah_core.tasks.STEAL_BELOW_S`, its next item is left for the
    worker that ran its last one (that worker's home list: it takes it when free, and no
    other worker does); a lighter group's item goes to whoever is free first. An item left
    for a worker that stops beating goes back to everyone."""

    steal_below_s = STEAL_BELOW_S

    def __init__(self, executor: RedisExecutor, work: Task) -> None:
        self.executor = executor
        self.store = executor.store
        self.work = work
        self.jobs: dict[str, int] = {}  # job -> the item's index
        self.items: dict[int, Json] = {}  # index -> the item, while it has a job
        self.homed: dict[str, str] = {}  # job -> the worker (lease token) it is left for
        self.home: dict[str, str] = {}  # group -> the worker that ran its items last
        self.weight: dict[str, float] = {}  # group -> seconds that worker ran them
        self._alive = 1
        self._alive_at = -WORKERS_EVERY_S
        self._quiet_since = time.monotonic()

    @property
    def capacity(self) -> int:
        if time.monotonic() - self._alive_at >= WORKERS_EVERY_S:
            with contextlib.suppress(redis.RedisError):
                self._alive = max(1, self.store.workers())
            self._alive_at = time.monotonic()
        return self._alive

    def submit(self, index: int, item: Json) -> None:
        self._post(index, item, self._home(item))

    def _home(self, item: Json) -> str | None:
        """The worker ``item`` is left for: its group's, if that worker ran the group's items
        long enough and still beats; else None (anyone)."""
        group = group_of(self.work, item)
        worker = None if group is None else self.home.get(group)
        if worker is None or self.weight.get(group or "", 0.0) < self.steal_below_s:
            return None
        return worker if self.store.beating(_name(worker)) else None

    def _post(self, index: int, item: Json, home: str | None) -> None:
        try:
            job = self.store.create_work(self.work, [item], 1, OWNER, ttl_s=TTL_S, home=home)
        except redis.RedisError as error:
            raise KalahError(f"the workers' Redis at {self.executor.url}: {error}") from None
        self.jobs[job] = index
        self.items[index] = item
        if home is not None:
            self.homed[job] = home

    def _drop(self, job: str) -> None:
        self.homed.pop(job, None)
        with contextlib.suppress(redis.RedisError):  # else cancelled a minute later
            self.store.cancel(job)
            self.store.forget(job)

    def cancel(self, index: int) -> None:
        for job, held in list(self.jobs.items()):
            if held == index:
                del self.jobs[job]
                self.items.pop(index, None)
                self._drop(job)  # its worker learns it at its next renewal (1 s)

    def _ran(self, job: str, index: int) -> None:
        """Count the answered ``job``'s seconds to its group, whose home is now the worker
        that ran it. (Unlike a local session's, the count is not reset when the worker
        changes: before a group is heavy its items go to any worker, so a reset would keep
        most groups light however long they ran.)"""
        group = group_of(self.work, self.items.pop(index, None))
        taker = self.store.taker(job) if group is not None else None
        if group is None or taker is None:
            return
        worker, seconds = taker
        self.home[group] = worker
        self.weight[group] = self.weight.get(group, 0.0) + seconds

    def running(self) -> int:
        return len(self.jobs)

    def wait(self, timeout: float) -> list[tuple[int, Json]]:
        if not self.jobs:
            return []
        try:
            answers = self.store.feed_any(sorted(self.jobs), timeout)
            if not answers:
                self._check()
        except redis.RedisError as error:  # waited out (a minute: the jobs are cancelled)
            self.executor.stream.write(f"  Redis: {error}; again in {PAUSE_S:.1f} s\n")
            time.sleep(PAUSE_S)
            return []
        done = []
        for job, _, body in answers:
            index = self.jobs.pop(job, None)
            if index is not None:
                done.append((index, json.loads(body)))
                self.homed.pop(job, None)
                with contextlib.suppress(redis.RedisError):
                    self._ran(job, index)
                    self.store.forget(job)
        if done:
            self._quiet_since = time.monotonic()
        return done

    def _check(self) -> None:
        """The jobs not answered: failed or gone is an error; one left for a worker that
        stopped beating, not taken, goes to everyone; no worker alive is said."""
        for job in list(self.jobs):
            status = self.store.status(job)
            if status is None:
                raise RuntimeError(f"job {job} is gone from {self.executor.url}")
            if status.status in ("failed", "cancelled"):
                raise RuntimeError(f"job {job} {status.status}: {status.error or ''}".strip())
            home = self.homed.get(job)
            if home and status.status == "queued" and not self.store.beating(_name(home)):
                index = self.jobs.pop(job)
                self._drop(job)
                self._post(index, self.items[index], None)
        if time.monotonic() - self._quiet_since > NO_WORKER_EVERY_S:
            self._quiet_since = time.monotonic()
            if not self.store.workers():
                self.executor.stream.write(
                    f"  waiting, no kalah worker alive on {self.executor.url}\n"
                )
                self.executor.stream.flush()

    def close(self) -> None:
        for job in list(self.jobs):
            self._drop(job)
        self.jobs.clear()


def _name(token: str) -> str:
    """A worker's name (what it beats as) from its lease token (``<name>/<token>``)."""
    return token.rpartition("/")[0]


def redis_executor(url: str) -> RedisExecutor:
    """The ``kalah.executors`` entry point ``redis``."""
    return RedisExecutor(url)
