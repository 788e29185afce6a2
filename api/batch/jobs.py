"""Batch jobs in Redis: the state a job's chunks, its workers and ``GET /v1/jobs/{id}`` share.

A job is its input slots (``items``: each slot names a distinct task or holds a problem), the
distinct tasks cut into chunks (``chunk:<n>``, grouped by rules so one chunk shares its rules),
one RQ job per chunk on the queue ``kalah-batch``, and the answers of finished tasks
(``results``). Every key expires ``KALAH_JOB_TTL_S`` after the job's last change.

Crash safety is ours, not RQ's (whose abandoned-job detection takes minutes): a worker that
starts a chunk takes a lease (``lease:<n>``, :data:`LEASE_MS`) and renews it every
:data:`HEARTBEAT_S` while it works. Every worker's reaper looks at the chunks started but
neither finished nor leased, i.e. whose worker died, and puts them back on the queue (a chunk
lost :data:`MAX_ATTEMPTS` times fails the job). Finishing a chunk is one atomic script that
records the chunk once, so a chunk run twice (the slow original and its retry) counts once.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import redis
from rq import Queue

from ..analysis.request import AnalysisRequest
from .items import Batch, as_cached

log = logging.getLogger("api.batch")

PREFIX = "kalah:v1:job"
ACTIVE = "kalah:v1:jobs:active"
"""Ids of jobs with unfinished chunks: what the reapers scan."""
QUEUE = "kalah-batch"
LEASE_MS = 5000
HEARTBEAT_S = 1.0
REAP_EVERY_S = 1.0
MAX_ATTEMPTS = 3
CHUNK_FUNCTION = "api.batch.worker.run_chunk"

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


@dataclass(frozen=True, slots=True)
class JobKeys:
    """The Redis keys of one job."""

    id: str

    def _key(self, name: str) -> str:
        return f"{PREFIX}:{self.id}:{name}"

    @property
    def meta(self) -> str:
        """Hash: status, total, done (slots), chunks, created, error."""
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


class JobStore:
    """Jobs in the Redis at ``url`` (the one the answer cache uses)."""

    def __init__(self, url: str, *, ttl_s: int, timeout_s: float = 10.0) -> None:
        self.redis = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self.ttl_s = ttl_s
        self.queue = Queue(QUEUE, connection=self.redis)
        self._begin = self.redis.register_script(_BEGIN)
        self._renew = self.redis.register_script(_RENEW)
        self._complete = self.redis.register_script(_COMPLETE)
        self._reap = self.redis.register_script(_REAP)

    # -- creating a job (the API) ------------------------------------------------------------

    def create(self, batch: Batch, chunk_size: int) -> JobStatus:
        job = JobKeys(uuid.uuid4().hex)
        tasks = batch.tasks
        order = sorted(range(len(tasks)), key=lambda k: (tasks[k].rules.key, tasks[k].key))
        chunks = [order[i : i + chunk_size] for i in range(0, len(order), chunk_size)]
        per_task = Counter(slot.task for slot in batch.slots if slot.task is not None)
        problems = sum(1 for slot in batch.slots if slot.task is None)
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
            },
        )
        encoded = [
            json.dumps({"p": s.problem})
            if s.task is None
            else json.dumps({"t": s.task, "f": int(s.first)})
            for s in batch.slots
        ]
        for start in range(0, len(encoded), 1000):
            pipe.rpush(job.items, *encoded[start : start + 1000])
        for n, chunk in enumerate(chunks):
            body = [{"t": k, **tasks[k].to_json()} for k in chunk]
            pipe.set(job.chunk(n), json.dumps(body), ex=self.ttl_s)
            pipe.hset(job.chunk_items, str(n), sum(per_task[k] for k in chunk))
        for key in (job.meta, job.items, job.chunk_items):
            pipe.expire(key, self.ttl_s)
        if chunks:
            pipe.sadd(ACTIVE, job.id)
        pipe.execute()
        self._enqueue(
            job.id, [(n, sum(tasks[k].limits.time_ms for k in c)) for n, c in enumerate(chunks)]
        )
        return JobStatus(job.id, status, problems, len(batch.slots), None)

    def _enqueue(
        self, job_id: str, chunks: Sequence[tuple[int, int]], *, front: bool = False
    ) -> None:
        """One RQ job per chunk; its timeout is twice the chunk's budget plus a minute."""
        data = [
            Queue.prepare_data(
                CHUNK_FUNCTION,
                args=(job_id, n),
                timeout=int(budget_ms / 1000 * 2) + 60,
                result_ttl=0,
                failure_ttl=self.ttl_s,
                description=f"kalah batch {job_id} chunk {n}",
                at_front=front,
            )
            for n, budget_ms in chunks
        ]
        for start in range(0, len(data), 500):
            self.queue.enqueue_many(data[start : start + 500])

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
        stop = threading.Event()
        lease = JobKeys(job_id).lease(n)

        def renew() -> None:
            while not stop.wait(HEARTBEAT_S):
                try:
                    self._renew(keys=[lease], args=[token, LEASE_MS])
                except redis.RedisError as error:  # the next beat tries again
                    log.warning("lease renewal of %s failed: %s", lease, error)

        thread = threading.Thread(target=renew, name=f"lease-{n}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

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
            lost: list[tuple[int, int]] = []
            for raw_n in cast(set[bytes], self.redis.smembers(job.started)):
                n = int(raw_n)
                if not self._reap(keys=[job.started, job.lease(n), job.done], args=[n]):
                    continue
                attempts = int(cast(bytes, self.redis.hget(job.attempts, str(n))) or 0)
                if attempts >= MAX_ATTEMPTS:
                    self.fail(job.id, f"chunk {n} lost its worker {attempts} times")
                    break
                raw = cast(bytes | None, self.redis.get(job.chunk(n))) or b"[]"
                budget = sum(item["limits"]["time_ms"] for item in json.loads(raw))
                log.warning("job %s: chunk %d lost its worker; queued again", job.id, n)
                lost.append((n, budget))
            if lost:
                self._enqueue(job.id, lost, front=True)
                requeued += len(lost)
        return requeued

    def fail(self, job_id: str, error: str) -> None:
        job = JobKeys(job_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(job.meta, mapping={"status": "failed", "error": error})
        pipe.srem(ACTIVE, job_id)
        pipe.execute()
