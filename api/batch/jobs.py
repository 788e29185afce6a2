"""Batch jobs in Redis: the state a job's chunks, its workers and ``GET /v1/jobs/{id}`` share.

A job is its input slots (``items``: each slot names a distinct task or holds a problem), the
distinct tasks cut into chunks (``chunk:<n>``, grouped by rules so one chunk shares its rules),
one RQ job per chunk on the queue ``kalah-batch``, and the answers of finished tasks
(``results``). Every key expires ``KALAH_JOB_TTL_S`` after the job's last change.

Crash safety is ours, not RQ's (whose abandoned-job detection takes minutes): a worker that
starts a chunk takes a lease (``lease:<n>``, :data:`LEASE_MS`) and renews it every
:data:`HEARTBEAT_S` while it works. Every worker's reaper looks at the chunks started but
neither finished nor leased, i.e. whose worker died, and puts them back on the queue (a chunk
lost :data:`MAX_ATTEMPTS` times fails the job). A ticket lost with its worker before the chunk
was taken is issued again (:meth:`JobStore.reissue`). Finishing a chunk is one atomic script
that records the chunk once, so a chunk run twice (the slow original and its retry) counts once.

Fair scheduling: a job belongs to the API key that posted it (its owner; nobody else reads
it). Its chunks wait in the owner's list (``fair:<owner>``) and the owners with waiting chunks
in a ring (``fair:ring``); the RQ queue holds one *ticket* per waiting chunk, and a worker
that takes a ticket runs the next chunk of the next owner in the ring (:meth:`JobStore.take`).
Owners are thus served round-robin, a chunk each: one key's 1,000-chunk job does not hold
back another key's small one, which waits for at most one chunk per other busy key.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import redis
from rq import Queue

from ..config import Settings
from ..core.answer import as_cached
from ..core.request import AnalysisRequest
from ..lease import renewing
from .items import Batch

log = logging.getLogger("api.batch")

PREFIX = "kalah:v1:job"
ACTIVE = "kalah:v1:jobs:active"
"""Ids of jobs with unfinished chunks: what the reapers scan."""
QUEUE = "kalah-batch"
FAIR_PREFIX = "kalah:v1:fair:"
RING = FAIR_PREFIX + "ring"
"""Owners with waiting chunks, served round-robin (see the module docstring)."""
WORKERS = "kalah:v1:workers"
"""The batch workers alive: each worker's name, scored by its last beat (Redis's clock, ms)."""
WORKER_BEAT_S = 1.0
WORKER_STALE_S = 10.0
"""A worker that has not beaten for this long is dead (or cut off): it runs no job."""
LEASE_MS = 5000
HEARTBEAT_S = 1.0
REAP_EVERY_S = 1.0
MAX_ATTEMPTS = 3
TICKET_FUNCTION = "api.batch.worker.run_ticket"

_BEGIN = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'status') == 'failed' then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SET', KEYS[4], ARGV[2], 'PX', ARGV[3])
redis.call('HINCRBY', KEYS[5], ARGV[1], 1)
if redis.call('HGET', KEYS[1], 'status') == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running')
end
return 1
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# KEYS: meta, done, started, lease, results, chunk_items, active, items, attempts
# ARGV: chunk, job id, ttl, then task index and answer pairs
_COMPLETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[5], ARGV[i], ARGV[i + 1]) end
redis.call('HINCRBY', KEYS[1], 'done', redis.call('HGET', KEYS[6], ARGV[1]))
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[4])
if redis.call('SCARD', KEYS[2]) == tonumber(redis.call('HGET', KEYS[1], 'chunks')) then
  if redis.call('HGET', KEYS[1], 'status') ~= 'failed' then
    redis.call('HSET', KEYS[1], 'status', 'finished')
  end
  redis.call('SREM', KEYS[7], ARGV[2])
end
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[8], KEYS[9]}) do
  redis.call('EXPIRE', key, ARGV[3])
end
return 1
"""

# The next waiting chunk of the next owner in the ring (rotating it), or false.
# KEYS: ring; ARGV: the owners' list prefix.
_TAKE = """
for _ = 1, redis.call('LLEN', KEYS[1]) do
  local owner = redis.call('RPOPLPUSH', KEYS[1], KEYS[1])
  if not owner then return false end
  local waiting = ARGV[1] .. owner
  local chunk = redis.call('LPOP', waiting)
  if redis.call('LLEN', waiting) == 0 then redis.call('LREM', KEYS[1], 0, owner) end
  if chunk then return chunk end
end
return false
"""

# Chunks join their owner's list (at the front: re-queued ones), the owner joins the ring
# (at the head: the ring is served from its tail, each owner served going back to the head).
# KEYS: ring, the owner's list; ARGV: owner, front (1/0), then the chunks ("<job>:<n>").
_WAIT = """
for i = 3, #ARGV do
  if ARGV[2] == '1' then redis.call('LPUSH', KEYS[2], ARGV[i])
  else redis.call('RPUSH', KEYS[2], ARGV[i]) end
end
if not redis.call('LPOS', KEYS[1], ARGV[1]) then redis.call('LPUSH', KEYS[1], ARGV[1]) end
return 1
"""

# A started chunk that is neither finished nor leased lost its worker: take it off
# ``started`` (once, whichever reaper gets there first). KEYS: started, lease, done.
_REAP = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then
  redis.call('SREM', KEYS[1], ARGV[1])
  return 0
end
return redis.call('SREM', KEYS[1], ARGV[1])
"""


# A worker's beat on Redis's clock, dropping the workers silent too long.
# KEYS: workers; ARGV: name, stale ms.
_BEAT = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], ms, ARGV[1])
return 1
"""

# The workers that beat within the stale time. KEYS: workers; ARGV: stale ms.
_ALIVE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], ms - tonumber(ARGV[1]), '+inf')
"""


def stalled_reason(workers: int) -> str | None:
    """Why queued jobs cannot run with ``workers`` batch workers alive, or None."""
    if workers:
        return None
    return (
        f"no batch worker has reported in the last {WORKER_STALE_S:.0f} s: jobs wait until "
        "one runs (kalah worker)"
    )


@dataclass(frozen=True, slots=True)
class JobKeys:
    """The Redis keys of one job."""

    id: str

    def _key(self, name: str) -> str:
        return f"{PREFIX}:{self.id}:{name}"

    @property
    def meta(self) -> str:
        """Hash: status, total, done (slots), chunks, created, owner, error."""
        return self._key("meta")

    @property
    def items(self) -> str:
        """List, one per input slot: {"t": task, "f": first occurrence} or {"p": problem}."""
        return self._key("items")

    @property
    def results(self) -> str:
        """Hash: task index -> answer body."""
        return self._key("results")

    @property
    def done(self) -> str:
        """Set of finished chunks."""
        return self._key("done")

    @property
    def started(self) -> str:
        """Set of chunks started and not finished (each has a lease while its worker lives)."""
        return self._key("started")

    @property
    def attempts(self) -> str:
        """Hash: chunk -> times started."""
        return self._key("attempts")

    @property
    def chunk_items(self) -> str:
        """Hash: chunk -> input slots it answers (repeats included)."""
        return self._key("chunk_items")

    def chunk(self, n: int) -> str:
        return f"{PREFIX}:{self.id}:chunk:{n}"

    def lease(self, n: int) -> str:
        return f"{PREFIX}:{self.id}:lease:{n}"


@dataclass(frozen=True, slots=True)
class JobStatus:
    id: str
    status: str
    done: int
    total: int
    error: str | None
    owner: str = ""


class JobStore:
    """Jobs in the state store at ``url`` (:mod:`api.state`: never evicted).
    ``chunk_timeout_s``: what RQ allows a ticket (twice the largest chunk's budget and a
    minute: a ticket may run any owner's chunk)."""

    def __init__(
        self, url: str, *, ttl_s: int, timeout_s: float = 10.0, chunk_timeout_s: int = 700
    ) -> None:
        self.redis = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self.ttl_s = ttl_s
        self.chunk_timeout_s = chunk_timeout_s
        self._take = self.redis.register_script(_TAKE)
        self._wait = self.redis.register_script(_WAIT)
        self.queue = Queue(QUEUE, connection=self.redis)
        self._begin = self.redis.register_script(_BEGIN)
        self._renew = self.redis.register_script(_RENEW)
        self._complete = self.redis.register_script(_COMPLETE)
        self._reap = self.redis.register_script(_REAP)
        self._beat = self.redis.register_script(_BEAT)
        self._alive = self.redis.register_script(_ALIVE)

    # -- creating a job (the API) ------------------------------------------------------------

    def create(self, batch: Batch, chunk_size: int, owner: str) -> JobStatus:
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
            self._enqueue(pipe, owner, job.id, range(len(chunks)))
        pipe.execute()
        return JobStatus(job.id, status, problems, len(batch.slots), None, owner)

    def _enqueue(
        self,
        pipe: redis.client.Pipeline,
        owner: str,
        job_id: str,
        chunks: Sequence[int],
        *,
        front: bool = False,
    ) -> None:
        """Chunks join their owner's waiting list, one ticket each on the RQ queue (in the
        same transaction: no chunk without a ticket)."""
        entries = [f"{job_id}:{n}" for n in chunks]
        if front:
            entries.reverse()  # LPUSH one by one: the first chunk ends up first
        for start in range(0, len(entries), 1000):
            self._wait(
                keys=[RING, FAIR_PREFIX + owner],
                args=[owner, int(front), *entries[start : start + 1000]],
                client=pipe,
            )
        self._tickets(pipe, len(entries), front=front)

    def _tickets(self, pipe: redis.client.Pipeline, count: int, *, front: bool = False) -> None:
        ticket = Queue.prepare_data(
            TICKET_FUNCTION,
            timeout=self.chunk_timeout_s,
            result_ttl=0,
            failure_ttl=self.ttl_s,
            description="kalah batch: the next chunk, owners round-robin",
            at_front=front,
        )
        for start in range(0, count, 500):
            self.queue.enqueue_many([ticket] * min(500, count - start), pipeline=pipe)

    def waiting(self) -> int:
        """How many chunks wait in their owners' lists (not yet taken by a worker)."""
        owners = cast(list[bytes], self.redis.lrange(RING, 0, -1))
        lengths = [self.redis.llen(FAIR_PREFIX + o.decode()) for o in owners]
        return sum(lengths)

    def reissue(self) -> int:
        """Tickets again for chunks left waiting without one; returns how many were issued.

        A worker cut off from Redis after taking a ticket off the queue and before taking its
        chunk loses the ticket (RQ drops a job it could not start), and the chunk would wait
        forever. Every waiting chunk has its ticket on the queue, so an empty queue while
        chunks wait means lost tickets (or tickets a worker is about to run): each waiting
        chunk gets one. A spare ticket finds no chunk and returns at once."""
        if self.queue.count:
            return 0
        waiting = self.waiting()
        if waiting:
            pipe = self.redis.pipeline(transaction=True)
            self._tickets(pipe, waiting)
            pipe.execute()
            log.warning("%d chunks waited without a ticket on the queue; tickets issued", waiting)
        return waiting

    def take(self) -> tuple[str, int] | None:
        """The next chunk to run, owners round-robin: (job id, chunk), or None."""
        raw = cast(bytes | None, self._take(keys=[RING], args=[FAIR_PREFIX]))
        if raw is None:
            return None
        job_id, _, n = raw.decode().partition(":")
        return job_id, int(n)

    # -- reading a job (the API) -------------------------------------------------------------

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
        """The JSON of slots ``offset .. offset+limit-1``: an analysis answer, a problem
        object, or ``null`` while its chunk is not finished."""
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
        out: list[bytes] = []
        for slot in slots:
            if "p" in slot:
                out.append(json.dumps(slot["p"], separators=(",", ":")).encode())
                continue
            body = found.get(str(slot["t"]))
            if body is None:
                out.append(b"null")
            else:
                out.append(body if slot["f"] else as_cached(body))
        return out

    # -- running a chunk (the workers) -------------------------------------------------------

    def begin_chunk(
        self, job_id: str, n: int, token: str
    ) -> list[tuple[int, AnalysisRequest]] | None:
        """Lease chunk ``n`` and return its tasks; None when there is nothing to do (finished
        already, the job failed or expired)."""
        job = JobKeys(job_id)
        began = self._begin(
            keys=[job.meta, job.done, job.started, job.lease(n), job.attempts],
            args=[n, token, LEASE_MS],
        )
        if not began:
            return None
        raw = cast(bytes | None, self.redis.get(job.chunk(n)))
        if raw is None:
            return None
        return [(item["t"], AnalysisRequest.from_json(item)) for item in json.loads(raw)]

    @contextmanager
    def heartbeat(self, job_id: str, n: int, token: str) -> Iterator[None]:
        """Renew the lease of chunk ``n`` every HEARTBEAT_S while the block runs."""
        lease = JobKeys(job_id).lease(n)

        def renew() -> None:
            self._renew(keys=[lease], args=[token, LEASE_MS])

        with renewing(renew, lease, HEARTBEAT_S):
            yield

    def complete_chunk(self, job_id: str, n: int, answers: Sequence[tuple[int, bytes]]) -> bool:
        """Store the chunk's answers and count it, once; False if it was already counted."""
        job = JobKeys(job_id)
        args: list[Any] = [n, job_id, self.ttl_s]
        for task, body in answers:
            args += [task, body]
        keys = [
            job.meta,
            job.done,
            job.started,
            job.lease(n),
            job.results,
            job.chunk_items,
            ACTIVE,
            job.items,
            job.attempts,
        ]
        return bool(self._complete(keys=keys, args=args) == 1)

    def reap(self) -> int:
        """Re-queue the chunks whose worker died; returns how many."""
        requeued = 0
        for raw_id in cast(set[bytes], self.redis.smembers(ACTIVE)):
            job = JobKeys(raw_id.decode())
            if not self.redis.exists(job.meta):
                self.redis.srem(ACTIVE, job.id)
                continue
            lost: list[int] = []
            for raw_n in cast(set[bytes], self.redis.smembers(job.started)):
                n = int(raw_n)
                if not self._reap(keys=[job.started, job.lease(n), job.done], args=[n]):
                    continue
                attempts = int(cast(bytes, self.redis.hget(job.attempts, str(n))) or 0)
                if attempts >= MAX_ATTEMPTS:
                    self.fail(job.id, f"chunk {n} lost its worker {attempts} times")
                    break
                log.warning("job %s: chunk %d lost its worker; queued again", job.id, n)
                lost.append(n)
            if lost:
                owner = cast(bytes | None, self.redis.hget(job.meta, "owner")) or b""
                pipe = self.redis.pipeline(transaction=True)
                self._enqueue(pipe, owner.decode(), job.id, sorted(lost), front=True)
                pipe.execute()
                requeued += len(lost)
        return requeued

    # -- who runs jobs (workers beat; the API and /readyz read) -----------------------------

    def beat(self, worker: str) -> None:
        """Worker ``worker`` is alive (every :data:`WORKER_BEAT_S`)."""
        self._beat(keys=[WORKERS], args=[worker, int(WORKER_STALE_S * 1000)])

    def leave(self, worker: str) -> None:
        """Worker ``worker`` stops (a clean exit; a dead one goes stale)."""
        self.redis.zrem(WORKERS, worker)

    def workers(self) -> int:
        """How many workers beat within the last :data:`WORKER_STALE_S`."""
        return int(cast(int, self._alive(keys=[WORKERS], args=[int(WORKER_STALE_S * 1000)])))

    def unfinished(self) -> int:
        """How many jobs have chunks not yet finished."""
        return int(self.redis.scard(ACTIVE))

    def stalled(self) -> str | None:
        """Why queued jobs cannot run now (no worker alive), or None."""
        return stalled_reason(self.workers())

    def fail(self, job_id: str, error: str) -> None:
        job = JobKeys(job_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(job.meta, mapping={"status": "failed", "error": error})
        pipe.srem(ACTIVE, job_id)
        pipe.execute()


def job_store(settings: Settings, *, timeout_s: float = 10.0) -> JobStore:
    """The job store of ``settings`` (its state store must be set)."""
    assert settings.state_url
    return JobStore(
        settings.state_url,
        ttl_s=settings.job_ttl_s,
        timeout_s=timeout_s,
        chunk_timeout_s=int(settings.batch_chunk * settings.max_time_ms / 1000 * 2) + 60,
    )
