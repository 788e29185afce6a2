"""Batch jobs in the state Redis, run by ``kalah worker`` processes: one :class:`JobStore`.

A job is its input slots (``items``: each slot names a distinct task or holds a problem), the
distinct tasks cut into chunks (``chunk:<n>``, grouped by rules so one chunk shares its rules)
and the answers of finished tasks (``results``). Every key expires ``KALAH_JOB_TTL_S`` after
the job's last change.

The queue is this store's own, in Redis, with no queue library over it:

- Fair scheduling: a job belongs to the API key that posted it (its owner; nobody else reads
  it). Its chunks wait in the owner's list (``fair:<owner>``) and the owners with waiting
  chunks in a ring (``fair:ring``); :meth:`RedisJobStore.take` gives the next chunk of the next
  owner in the ring. Owners are served round-robin, a chunk each: one key's 1,000-chunk job
  does not hold back another key's small one.
- Crash safety is the lease, part of the queue: taking a chunk leases it (:data:`LEASES`, a
  sorted set of expiry times on Redis's clock) to its runner, which renews it every
  :data:`HEARTBEAT_S`. :meth:`~RedisJobStore.take` gives a chunk whose lease lapsed (its
  runner died) before any waiting one, so the next runner to ask takes it over; a chunk taken
  :data:`~kalah_service.jobs.store.MAX_ATTEMPTS` times and lost each time gives the task in hand
  (its first unanswered one: answers are stored as they come) a problem and goes on with the
  others (engine work fails its job instead). There is no
  reaper and no ticket to lose: a chunk is in exactly one place (an owner's list, a runner's
  home list, or leased) and moves atomically (one script). A home list holds engine work left
  for one runner (a proof's test whose move that runner's table holds: :mod:`.work`); that
  runner takes from it before the ring, and has a bell of its own beside the common one.
- Waking up: idle runners block on :data:`BELL` (``BLPOP``, :data:`WAIT_S` at a time, on a
  connection whose socket timeout is longer than that, so an idle runner never mistakes the
  wait for a lost connection). A new job rings it once per chunk (at most
  :data:`BELL_MAX`); the bell is only a hint: every runner looks at the queue again after each
  wait, so a lost ring costs at most :data:`WAIT_S`.
- Finishing a chunk is one script that counts it once, so a chunk run twice (the slow original
  and its take-over) counts once.

A job may also hold engine work (:mod:`kalah_core.tasks`: a book build's boards, posted by
``kalah book build --redis-url``, see :mod:`.work`) instead of analyses: the same chunks,
queue and leases, but its runner stores each item's result as it comes (a partial
completion), the results are pushed on the job's ``feed`` list for the process that posted
it, and a chunk taken over skips the items already answered. Its poster renews a lease
(``poster``) as it reads the feed: a poster killed hard has its job cancelled when the lease
lapses (:data:`POSTER_LEASE_MS`), so workers do not run an orphan build to its end.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any, cast

import redis

from kalah_core.tasks import Json, Task, chunks

from ..core.problems import problem_object
from ..core.reply import dumps
from ..core.request import AnalysisRequest
from . import redis_layout as layout
from .items import Batch, slot_json
from .redis_layout import (
    ACTIVE,
    BELL,
    BELL_MAX,
    FAIR_PREFIX,
    HOME_BELL_PREFIX,
    HOME_PREFIX,
    LEASES,
    OWNED_PREFIX,
    PREFIX,
    RING,
    TOKENS,
    WORKERS,
    JobKeys,
)
from .store import (
    MAX_ATTEMPTS,
    UNFINISHED,
    Completed,
    JobStatus,
    Lease,
    lost_problem,
    stalled_reason,
)

log = logging.getLogger(__name__)

WORKER_BEAT_S = 1.0
WORKER_STALE_S = 10.0
"""A worker that has not beaten for this long is dead (or cut off): it runs no job."""
LEASE_MS = 5000
POSTER_LEASE_MS = 60_000
"""Engine work (a book build) is cancelled this long after its poster stopped reading its
results (killed without a chance to cancel it)."""
HEARTBEAT_S = 1.0
WAIT_S = 5
"""How long an idle runner blocks on the bell before it looks at the queue again."""

UNFINISHED_B = tuple(status.encode() for status in UNFINISHED)


class RedisJobStore:
    """Jobs in the state store at ``url`` (:mod:`kalah_service.stores.state`: never evicted).
    ``timeout_s``: the socket timeout of every call but the runners' blocking wait
    (:meth:`wait`)."""

    errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
    in_server = False

    def __init__(self, url: str, *, ttl_s: int, timeout_s: float = 10.0) -> None:
        self.redis = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        # The blocking wait gets a socket timeout longer than the wait itself.
        self._blocking = redis.Redis.from_url(
            url, socket_timeout=WAIT_S + max(timeout_s, 5.0), socket_connect_timeout=timeout_s
        )
        self.ttl_s = ttl_s
        self._take = self.redis.register_script(layout.TAKE)
        self._wait = self.redis.register_script(layout.WAIT)
        self._renew = self.redis.register_script(layout.RENEW)
        self._complete = self.redis.register_script(layout.COMPLETE)
        self._cancel = self.redis.register_script(layout.CANCEL)
        self._beat = self.redis.register_script(layout.BEAT)
        self._alive = self.redis.register_script(layout.ALIVE)
        self._beating = self.redis.register_script(layout.BEATING)

    # -- the API ---------------------------------------------------------------------------

    def create(self, batch: Batch, chunk_size: int, owner: str, payer: str = "") -> JobStatus:
        """A new job of ``owner`` (an API key id), its chunks waiting for the workers."""
        job = JobKeys(uuid.uuid4().hex)
        chunks = batch.chunks(chunk_size)
        problems = batch.problems
        status = "queued" if chunks else "finished"
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(
            job.meta,
            mapping={
                "status": status,
                "total": len(batch.slots),
                "done": problems,
                "chunks": len(chunks),
                "created": time.time(),
                "owner": owner,
                "payer": payer,
                "search_ms": 0,
            },
        )
        encoded = [
            json.dumps({"p": s.problem}, ensure_ascii=False)
            if s.task is None
            else json.dumps({"t": s.task, "f": int(s.first)})
            for s in batch.slots
        ]
        for start in range(0, len(encoded), 1000):
            pipe.rpush(job.items, *encoded[start : start + 1000])
        for n, chunk in enumerate(chunks):
            pipe.set(job.chunk(n), json.dumps(chunk.tasks), ex=self.ttl_s)
            pipe.hset(job.chunk_items, str(n), chunk.slots)
        for key in (job.meta, job.items, job.chunk_items):
            pipe.expire(key, self.ttl_s)
        if chunks:
            pipe.sadd(ACTIVE, job.id)
            pipe.sadd(OWNED_PREFIX + owner, job.id)
            pipe.expire(OWNED_PREFIX + owner, self.ttl_s)
            entries = [job.entry(n) for n in range(len(chunks))]
            for start in range(0, len(entries), 1000):
                self._wait(
                    keys=[RING, FAIR_PREFIX + owner],
                    args=[owner, *entries[start : start + 1000]],
                    client=pipe,
                )
            pipe.rpush(BELL, *["1"] * min(len(chunks), BELL_MAX))
            pipe.ltrim(BELL, -BELL_MAX, -1)
        pipe.execute()
        return JobStatus(job.id, status, problems, len(batch.slots), None, owner)

    def create_work(
        self,
        work: Task,
        items: Sequence[Json],
        chunk_size: int,
        owner: str,
        *,
        ttl_s: int,
        home: str | None = None,
    ) -> str:
        """A new job of engine work (see the module docstring): ``work`` over ``items`` (JSON)
        in chunks of ``chunk_size``; its results come back through :meth:`feed`. ``ttl_s``:
        how long its keys live after its last change (a chunk waits that long at most).
        ``home``: a runner (its lease token) whose chunks these are, in its own list instead
        of the owner's: it takes them before any other, and no other runner does."""
        job = JobKeys(uuid.uuid4().hex)
        parts = chunks(len(items), chunk_size)
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(
            job.meta,
            mapping={
                "status": "queued" if parts else "finished",
                "total": len(items),
                "done": 0,
                "chunks": len(parts),
                "created": time.time(),
                "owner": owner,
                "payer": "",
                "search_ms": 0,
                "feed": 1,
                "kind": work.kind,
            },
        )
        for n, part in enumerate(parts):
            body = {"work": work.to_json(), "items": [[i, items[i]] for i in part]}
            pipe.set(job.chunk(n), json.dumps(body), ex=ttl_s)
            pipe.hset(job.chunk_items, str(n), len(part))
        for key in (job.meta, job.chunk_items):
            pipe.expire(key, ttl_s)
        pipe.set(job.poster, 1, px=POSTER_LEASE_MS)
        if parts:
            pipe.sadd(ACTIVE, job.id)
            entries = [job.entry(n) for n in range(len(parts))]
            if home is not None:
                pipe.rpush(HOME_PREFIX + home, *entries)
                pipe.expire(HOME_PREFIX + home, ttl_s)
                pipe.rpush(HOME_BELL_PREFIX + home, "1")
                pipe.ltrim(HOME_BELL_PREFIX + home, -BELL_MAX, -1)
                pipe.expire(HOME_BELL_PREFIX + home, ttl_s)
                entries = []
            for start in range(0, len(entries), 1000):
                self._wait(
                    keys=[RING, FAIR_PREFIX + owner],
                    args=[owner, *entries[start : start + 1000]],
                    client=pipe,
                )
            if entries:
                pipe.rpush(BELL, *["1"] * min(len(parts), BELL_MAX))
                pipe.ltrim(BELL, -BELL_MAX, -1)
        pipe.execute()
        return job.id

    def feed(self, job_id: str, timeout_s: float) -> list[tuple[int, bytes]]:
        """The results of engine work answered since the last call (each once), waiting up to
        ``timeout_s`` for the first. Each call renews the poster's lease: a poster that stops
        calling (killed) has its job cancelled :data:`POSTER_LEASE_MS` later."""
        job = JobKeys(job_id)
        self.redis.set(job.poster, 1, px=POSTER_LEASE_MS)
        first = cast(
            tuple[bytes, bytes] | None,
            self._blocking.blpop([job.feed], timeout=max(0.01, min(WAIT_S, timeout_s))),
        )
        if first is None:
            return []
        more = cast(list[bytes] | None, self.redis.lpop(job.feed, 10_000)) or []
        indices = [first[1], *more]
        bodies = cast(list[bytes | None], self.redis.hmget(job.results, indices))
        return [
            (int(index), body)
            for index, body in zip(indices, bodies, strict=True)
            if body is not None
        ]

    def feed_any(self, job_ids: Sequence[str], timeout_s: float) -> list[tuple[str, int, bytes]]:
        """:meth:`feed` of several jobs at once: ``(job, index, result)`` answered since the
        last call, waiting up to ``timeout_s`` for the first of any (each poster's lease
        renewed)."""
        if not job_ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.set(JobKeys(job_id).poster, 1, px=POSTER_LEASE_MS)
        pipe.execute()
        feeds = {JobKeys(job_id).feed: job_id for job_id in job_ids}
        first = cast(
            tuple[bytes, bytes] | None,
            self._blocking.blpop(list(feeds), timeout=max(0.01, min(WAIT_S, timeout_s))),
        )
        if first is None:
            return []
        found = [(feeds[first[0].decode()], first[1])]
        for feed, job_id in feeds.items():
            more = cast(list[bytes] | None, self.redis.lpop(feed, 10_000)) or []
            found += [(job_id, index) for index in more]
        answers = []
        for job_id, index in found:
            body = cast(bytes | None, self.redis.hget(JobKeys(job_id).results, index))
            if body is not None:
                answers.append((job_id, int(index), body))
        return answers

    def forget(self, job_id: str) -> None:
        """Delete a job's keys (its poster has its results); chunks still queued are then
        dropped when reached, and a runner's late answers are refused (the job is gone)."""
        job = JobKeys(job_id)
        chunks_n = int(cast(bytes | None, self.redis.hget(job.meta, "chunks")) or 0)
        keys = [job.meta, job.items, job.results, job.done, job.attempts, job.chunk_items]
        keys += [job.feed, job.poster, *(job.chunk(n) for n in range(chunks_n))]
        pipe = self.redis.pipeline(transaction=False)
        for start in range(0, len(keys), 1000):
            pipe.delete(*keys[start : start + 1000])
        pipe.srem(ACTIVE, job_id)
        pipe.execute()

    def status(self, job_id: str) -> JobStatus | None:
        meta = cast(dict[bytes, bytes], self.redis.hgetall(JobKeys(job_id).meta))
        if not meta:
            return None
        error = meta.get(b"error")
        return JobStatus(
            job_id,
            meta[b"status"].decode(),
            int(meta[b"done"]),
            int(meta[b"total"]),
            error.decode() if error is not None else None,
            meta.get(b"owner", b"").decode(),
        )

    def results(self, job_id: str, offset: int, limit: int) -> list[bytes]:
        job = JobKeys(job_id)
        raw = cast(list[bytes], self.redis.lrange(job.items, offset, offset + limit - 1))
        slots = [json.loads(item) for item in raw]
        wanted = sorted({str(s["t"]) for s in slots if "t" in s})
        found = (
            dict(
                zip(
                    wanted,
                    cast(list[bytes | None], self.redis.hmget(job.results, wanted)),
                    strict=True,
                )
            )
            if wanted
            else {}
        )
        return [
            slot_json(slot["p"], None, True)
            if "p" in slot
            else slot_json(None, found.get(str(slot["t"])), slot["f"])
            for slot in slots
        ]

    def cancel(self, job_id: str) -> JobStatus | None:
        job = JobKeys(job_id)
        if not self._cancel(keys=[job.meta, ACTIVE], args=[job_id]):
            return None
        return self.status(job_id)

    def unfinished_of(self, owner: str) -> int:
        owned = OWNED_PREFIX + owner
        ids = sorted(cast(set[bytes], self.redis.smembers(owned)))
        if not ids:
            return 0
        statuses = [self.redis.hget(JobKeys(i.decode()).meta, "status") for i in ids]
        over = [i for i, status in zip(ids, statuses, strict=True) if status not in UNFINISHED_B]
        if over:
            self.redis.srem(owned, *over)
        return len(ids) - len(over)

    def workers(self) -> int:
        """How many workers beat within the last :data:`WORKER_STALE_S`."""
        return int(cast(int, self._alive(keys=[WORKERS], args=[int(WORKER_STALE_S * 1000)])))

    def stalled(self) -> str | None:
        return stalled_reason(self.workers(), WORKER_STALE_S)

    def unfinished(self) -> int:
        return int(self.redis.scard(ACTIVE))

    def probe(self) -> None:
        self.redis.set(f"{PREFIX}:probe", 0, ex=60)  # a write: an OOM Redis still pings

    # -- the runners -----------------------------------------------------------------------

    def take(self, worker: str) -> Lease | None:
        """The next chunk (see :data:`~.redis_layout.TAKE`); taken over, without the tasks
        answered already. A malformed chunk fails its job (logged as such) and the next one is
        taken."""
        problem = dumps(problem_object(lost_problem(MAX_ATTEMPTS))).decode()
        while True:
            taken = cast(
                list[bytes] | None,
                self._take(
                    keys=[RING, LEASES, TOKENS, ACTIVE],
                    args=[
                        FAIR_PREFIX,
                        PREFIX,
                        worker,
                        LEASE_MS,
                        MAX_ATTEMPTS,
                        problem,
                        HOME_PREFIX,
                    ],
                ),
            )
            if not taken:
                return None
            entry, attempt, body, payer, poisoned = taken
            job_id, _, n = entry.decode().partition(":")
            if poisoned:
                log.error(
                    "job %s: chunk %s lost its worker %d times on task %s; the task gets a "
                    "problem, the chunk goes on",
                    job_id,
                    n,
                    MAX_ATTEMPTS,
                    poisoned.decode(),
                )
            try:
                return self._lease(job_id, int(n), worker, int(attempt), body, payer.decode())
            except redis.RedisError:
                raise
            except Exception as error:  # not the store failing: this chunk is unreadable
                log.error("job %s: chunk %s is malformed (%r); the job fails", job_id, n, error)
                self._fail(job_id, entry, f"chunk {n} is malformed")

    def _lease(
        self, job_id: str, n: int, worker: str, attempt: int, body: bytes, payer: str
    ) -> Lease:
        chunk = json.loads(body)
        results = JobKeys(job_id).results
        if isinstance(chunk, dict):  # engine work: the items not answered yet
            items = [(int(i), item) for i, item in chunk["items"]]
            if attempt > 1 and items:
                answered = self.redis.hmget(results, [i for i, _ in items])
                items = [x for x, a in zip(items, answered, strict=True) if a is None]
            work = Task.from_json(chunk["work"])
            return Lease(job_id, n, worker, [], "", attempt, work, items)
        tasks = [(int(item["t"]), AnalysisRequest.from_json(item)) for item in chunk]
        if tasks:  # taken over (or first taken): the answers stored so far stand
            answered = self.redis.hmget(results, [t for t, _ in tasks])
            tasks = [x for x, a in zip(tasks, answered, strict=True) if a is None]
        return Lease(job_id, n, worker, tasks, payer, attempt)

    def _fail(self, job_id: str, entry: bytes, error: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(JobKeys(job_id).meta, mapping={"status": "failed", "error": error})
        pipe.srem(ACTIVE, job_id)
        pipe.zrem(LEASES, entry)
        pipe.hdel(TOKENS, entry)
        pipe.execute()

    def renew(self, lease: Lease) -> bool:
        job = JobKeys(lease.job_id)
        renewed = self._renew(
            keys=[LEASES, TOKENS, job.meta, job.poster, ACTIVE],
            args=[job.entry(lease.chunk), lease.token, LEASE_MS, lease.job_id],
        )
        return bool(renewed)

    def complete(self, lease: Lease, done: Completed) -> bool:
        job = JobKeys(lease.job_id)
        args: list[Any] = [
            lease.chunk,
            lease.job_id,
            self.ttl_s,
            job.entry(lease.chunk),
            2 if done.more else int(done.whole),
            f"{done.search_ms:.3f}",
        ]
        for task, body in done.answers:
            args += [task, body]
        keys = [
            job.meta,
            job.done,
            job.results,
            job.chunk_items,
            ACTIVE,
            LEASES,
            TOKENS,
            job.items,
            job.attempts,
            job.feed,
            job.chunk(lease.chunk),
        ]
        return bool(self._complete(keys=keys, args=args) == 1)

    def wait(self, timeout_s: float, worker: str | None = None) -> None:
        bells = [BELL] if worker is None else [HOME_BELL_PREFIX + worker, BELL]
        self._blocking.blpop(bells, timeout=max(0.01, min(WAIT_S, timeout_s)))

    def taker(self, job_id: str) -> tuple[str, float] | None:
        """The runner (its lease token) that last took a chunk of engine work ``job_id``, and
        the seconds since (Redis's clock); None if none did."""
        worker, taken = cast(
            list[bytes | None], self.redis.hmget(JobKeys(job_id).meta, ["worker", "taken"])
        )
        if worker is None or taken is None:
            return None
        seconds, micros = self.redis.time()
        return worker.decode(), max(0.0, seconds + micros / 1e6 - int(taken) / 1000)

    def beating(self, worker: str) -> bool:
        """Whether the worker named ``worker`` (its name, without the lease token's suffix)
        beat within the stale time."""
        found = self._beating(keys=[WORKERS], args=[worker, int(WORKER_STALE_S * 1000)])
        return found is not None

    def waiting(self) -> int:
        """How many chunks wait in their owners' lists (not yet taken by a worker)."""
        owners = cast(list[bytes], self.redis.lrange(RING, 0, -1))
        return sum(int(self.redis.llen(FAIR_PREFIX + o.decode())) for o in owners)

    def pending(self) -> bool:
        return bool(self.waiting() or self.redis.zcard(LEASES))

    def beat(self, worker: str) -> None:
        self._beat(keys=[WORKERS], args=[worker, int(WORKER_STALE_S * 1000)])

    def leave(self, worker: str) -> None:
        self.redis.zrem(WORKERS, worker)
