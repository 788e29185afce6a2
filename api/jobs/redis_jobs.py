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
  reaper and no ticket to lose: a chunk is in exactly one place (an owner's list, or leased)
  and moves atomically (one script).
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
from dataclasses import dataclass
from typing import Any, cast

import redis

from kalah_core.tasks import Json, Task, chunks

from ..base.config import Settings
from ..core.problems import problem_object
from ..core.reply import as_cached, dumps
from ..core.request import AnalysisRequest
from .items import Batch
from .store import (
    MAX_ATTEMPTS,
    UNFINISHED,
    Completed,
    JobStatus,
    Lease,
    lost_problem,
    stalled_reason,
)

log = logging.getLogger("kalah_service.batch")

PREFIX = "kalah:v1:job"
ACTIVE = "kalah:v1:jobs:active"
"""Ids of jobs with unfinished chunks."""
OWNED_PREFIX = "kalah:v1:jobs:of:"
"""``<prefix><owner>``: a set of the owner's jobs that may be unfinished (cleaned as read)."""
FAIR_PREFIX = "kalah:v1:fair:"
RING = FAIR_PREFIX + "ring"
"""Owners with waiting chunks, served round-robin (see the module docstring)."""
LEASES = "kalah:v1:jobs:leases"
"""Sorted set: ``<job>:<chunk>`` being run, scored by its lease's end (Redis's clock, ms)."""
TOKENS = "kalah:v1:jobs:lease-tokens"
"""Hash: ``<job>:<chunk>`` -> the token of the runner holding its lease."""
BELL = "kalah:v1:jobs:bell"
"""A list idle runners block on; a new job pushes one entry per chunk."""
BELL_MAX = 64
WORKERS = "kalah:v1:workers"
"""The batch workers alive: each worker's name, scored by its last beat (Redis's clock, ms)."""
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

_NOW = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""

# The next chunk to run, leased: a lapsed lease first, else the next owner's next chunk
# (rotating the ring). Chunks of jobs gone, finished, failed or cancelled are dropped on the
# way. A chunk of analyses taken more than the attempts gives its first unanswered task the
# problem (ARGV[6]) and goes on; engine work fails its job. Returns {entry, attempt, chunk
# JSON, payer, the task given the problem or ''}, or false.
# KEYS: ring, leases, tokens, active; ARGV: fair prefix, job prefix, token, lease ms, attempts,
# problem JSON.
_TAKE = (
    _NOW
    + """
local function next_entry()
  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ms, 'LIMIT', 0, 1)
  if lapsed[1] then return lapsed[1] end
  for _ = 1, redis.call('LLEN', KEYS[1]) do
    local owner = redis.call('RPOPLPUSH', KEYS[1], KEYS[1])
    if not owner then return false end
    local waiting = ARGV[1] .. owner
    local chunk = redis.call('LPOP', waiting)
    if redis.call('LLEN', waiting) == 0 then redis.call('LREM', KEYS[1], 0, owner) end
    if chunk then return chunk end
  end
  return false
end
for _ = 1, 1000 do
  local entry = next_entry()
  if not entry then return false end
  local sep = string.find(entry, ':', 1, true)
  local job = string.sub(entry, 1, sep - 1)
  local n = string.sub(entry, sep + 1)
  local base = ARGV[2] .. ':' .. job .. ':'
  local meta = base .. 'meta'
  local status = redis.call('HGET', meta, 'status')
  local body = redis.call('GET', base .. 'chunk:' .. n)
  if (status == 'queued' or status == 'running') and redis.call('HGET', meta, 'feed') == '1'
      and redis.call('EXISTS', base .. 'poster') == 0 then
    redis.call('HSET', meta, 'status', 'cancelled', 'error', 'its poster is gone')
    redis.call('SREM', KEYS[4], job)
    status = 'cancelled'
  end
  if (status ~= 'queued' and status ~= 'running') or (not body)
      or redis.call('SISMEMBER', base .. 'done', n) == 1 then
    redis.call('ZREM', KEYS[2], entry)
    redis.call('HDEL', KEYS[3], entry)
  else
    local attempt = redis.call('HINCRBY', base .. 'attempts', n, 1)
    local poisoned = ''
    if attempt > tonumber(ARGV[5]) and redis.call('HGET', meta, 'feed') ~= '1' then
      -- Analyses are stored as they come: the first unanswered task was in hand each time
      -- the chunk lost its runner. It gets a problem; the chunk goes on with the others.
      local ok, tasks = pcall(cjson.decode, body)
      if ok and type(tasks) == 'table' then
        for _, t in ipairs(tasks) do
          local task = type(t) == 'table' and t.t ~= nil and tostring(t.t) or nil
          if task and redis.call('HEXISTS', base .. 'results', task) == 0 then
            redis.call('HSET', base .. 'results', task, ARGV[6])
            redis.call('HINCRBY', meta, 'done', tonumber(t.n) or 1)
            poisoned = task
            break
          end
        end
      end
      attempt = 1
      redis.call('HSET', base .. 'attempts', n, 1)
    end
    if attempt > tonumber(ARGV[5]) then
      redis.call('HSET', meta, 'status', 'failed',
        'error', 'chunk ' .. n .. ' lost its worker ' .. (attempt - 1) .. ' times')
      redis.call('SREM', KEYS[4], job)
      redis.call('ZREM', KEYS[2], entry)
      redis.call('HDEL', KEYS[3], entry)
    else
      redis.call('ZADD', KEYS[2], ms + tonumber(ARGV[4]), entry)
      redis.call('HSET', KEYS[3], entry, ARGV[3])
      if status == 'queued' then redis.call('HSET', meta, 'status', 'running') end
      return {entry, attempt, body, redis.call('HGET', meta, 'payer') or '', poisoned}
    end
  end
end
return false
"""
)

# Extend a lease held by this token of a job still running: 1, else 0 (stop). Engine work
# whose poster is gone (its lease lapsed: killed) is cancelled.
# KEYS: leases, tokens, meta, poster, active; ARGV: entry, token, lease ms, job id.
_RENEW = (
    _NOW
    + """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
local status = redis.call('HGET', KEYS[3], 'status')
if status ~= 'queued' and status ~= 'running' then return 0 end
if redis.call('HGET', KEYS[3], 'feed') == '1' and redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('HSET', KEYS[3], 'status', 'cancelled', 'error', 'its poster is gone')
  redis.call('SREM', KEYS[5], ARGV[4])
  return 0
end
redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[3]), ARGV[1])
return 1
"""
)

# Store a chunk's answers (whatever the job's state, while it exists: the results so far stay
# readable, and progress counts each task's slots when its answer is first stored) and count
# the chunk once. Returns 1 counted, 0 counted before, 2 the job is over (cancelled, failed),
# 3 a partial chunk of a running job (not counted, lease kept), -1 gone. A job with a feed
# (engine work) keeps each task's first answer and pushes its index there, and counts its
# progress by whole chunks.
# KEYS: meta, done, results, chunk_items, active, leases, tokens, items, attempts, feed, chunk
# ARGV: chunk, job id, ttl, entry, whole (1; 0 stopped early; 2 more follow: the lease stays
# whatever the job's state), search ms, then task index and answer pairs
_COMPLETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local feed = redis.call('HGET', KEYS[1], 'feed') == '1'
local slots = {}
if not feed then
  local ok, tasks = pcall(cjson.decode, redis.call('GET', KEYS[11]) or '[]')
  if ok and type(tasks) == 'table' then
    for _, t in ipairs(tasks) do
      if type(t) == 'table' and t.t ~= nil then slots[tostring(t.t)] = tonumber(t.n) or 1 end
    end
  end
end
for i = 7, #ARGV, 2 do
  if not feed then
    if redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
      redis.call('HINCRBY', KEYS[1], 'done', slots[ARGV[i]] or 1)
    end
  elseif redis.call('HSETNX', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[10], ARGV[i])
  end
end
redis.call('HINCRBYFLOAT', KEYS[1], 'search_ms', ARGV[6])
local status = redis.call('HGET', KEYS[1], 'status')
local result
if ARGV[5] == '2' then
  result = 3
elseif status ~= 'queued' and status ~= 'running' then
  result = 2
elseif ARGV[5] ~= '1' then
  result = 3
elseif redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  result = 0
else
  if feed then redis.call('HINCRBY', KEYS[1], 'done', redis.call('HGET', KEYS[4], ARGV[1])) end
  if redis.call('SCARD', KEYS[2]) == tonumber(redis.call('HGET', KEYS[1], 'chunks')) then
    redis.call('HSET', KEYS[1], 'status', 'finished')
    redis.call('SREM', KEYS[5], ARGV[2])
  end
  result = 1
end
if result ~= 3 then
  redis.call('ZREM', KEYS[6], ARGV[4])
  redis.call('HDEL', KEYS[7], ARGV[4])
end
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[8], KEYS[9], KEYS[10]}) do
  redis.call('EXPIRE', key, ARGV[3])
end
return result
"""

# Cancel a queued or running job (its waiting chunks are dropped when reached, its running
# ones stop at their next renewal). KEYS: meta, active; ARGV: job id. Returns 1, or 0 if gone.
_CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled')
  redis.call('SREM', KEYS[2], ARGV[1])
end
return 1
"""

# Chunks join their owner's list, the owner joins the ring (at the head: the ring is served
# from its tail). KEYS: ring, the owner's list; ARGV: owner, then the chunks ("<job>:<n>").
_WAIT = """
for i = 2, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
if not redis.call('LPOS', KEYS[1], ARGV[1]) then redis.call('LPUSH', KEYS[1], ARGV[1]) end
return 1
"""

# A worker's beat on Redis's clock, dropping the workers silent too long.
# KEYS: workers; ARGV: name, stale ms.
_BEAT = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], ms, ARGV[1])
return 1
"""
)

# The workers that beat within the stale time. KEYS: workers; ARGV: stale ms.
_ALIVE = (
    _NOW
    + """
return redis.call('ZCOUNT', KEYS[1], ms - tonumber(ARGV[1]), '+inf')
"""
)


@dataclass(frozen=True, slots=True)
class JobKeys:
    """The Redis keys of one job."""

    id: str

    def _key(self, name: str) -> str:
        return f"{PREFIX}:{self.id}:{name}"

    @property
    def meta(self) -> str:
        """Hash: status, total, done (slots), chunks, created, owner, payer, search_ms,
        error."""
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
    def attempts(self) -> str:
        """Hash: chunk -> times taken."""
        return self._key("attempts")

    @property
    def chunk_items(self) -> str:
        """Hash: chunk -> input slots it answers (repeats included)."""
        return self._key("chunk_items")

    @property
    def poster(self) -> str:
        """String (engine work only), expiring: the job's poster is alive. Once it expires,
        the job is cancelled (its chunks are dropped, its runners stop after the item in
        hand)."""
        return self._key("poster")

    @property
    def feed(self) -> str:
        """List (engine work only): indices of tasks answered, for the job's poster."""
        return self._key("feed")

    def chunk(self, n: int) -> str:
        return f"{PREFIX}:{self.id}:chunk:{n}"

    def entry(self, n: int) -> str:
        """The chunk's name in the queue and the leases: ``<job>:<n>``."""
        return f"{self.id}:{n}"


class RedisJobStore:
    """Jobs in the state store at ``url`` (:mod:`kalah_service.stores.state`: never evicted).
    ``timeout_s``: the socket timeout of every call but the runners' blocking wait
    (:meth:`wait`)."""

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
        self._take = self.redis.register_script(_TAKE)
        self._wait = self.redis.register_script(_WAIT)
        self._renew = self.redis.register_script(_RENEW)
        self._complete = self.redis.register_script(_COMPLETE)
        self._cancel = self.redis.register_script(_CANCEL)
        self._beat = self.redis.register_script(_BEAT)
        self._alive = self.redis.register_script(_ALIVE)

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
        self, work: Task, items: Sequence[Json], chunk_size: int, owner: str, *, ttl_s: int
    ) -> str:
        """A new job of engine work (see the module docstring): ``work`` over ``items`` (JSON)
        in chunks of ``chunk_size``; its results come back through :meth:`feed`. ``ttl_s``:
        how long its keys live after its last change (a chunk waits that long at most)."""
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
            for start in range(0, len(entries), 1000):
                self._wait(
                    keys=[RING, FAIR_PREFIX + owner],
                    args=[owner, *entries[start : start + 1000]],
                    client=pipe,
                )
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
        """The next chunk (see :data:`_TAKE`); taken over, without the tasks answered already.
        A malformed chunk fails its job (logged as such) and the next one is taken."""
        problem = dumps(problem_object(lost_problem(MAX_ATTEMPTS))).decode()
        while True:
            taken = cast(
                list[bytes] | None,
                self._take(
                    keys=[RING, LEASES, TOKENS, ACTIVE],
                    args=[FAIR_PREFIX, PREFIX, worker, LEASE_MS, MAX_ATTEMPTS, problem],
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

    def wait(self, timeout_s: float) -> None:
        self._blocking.blpop([BELL], timeout=max(0.01, min(WAIT_S, timeout_s)))

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


def job_store(settings: Settings, *, timeout_s: float = 10.0) -> RedisJobStore:
    """The job store of ``settings`` (its state store must be set)."""
    assert settings.state_url
    return RedisJobStore(settings.state_url, ttl_s=settings.job_ttl_s, timeout_s=timeout_s)
