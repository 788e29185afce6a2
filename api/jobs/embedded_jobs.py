"""Batch jobs without Redis, run by the server's own processes: one :class:`JobStore`.

The jobs live in a ``diskcache`` folder of their own (``<answer store>-jobs``: never evicted,
each key expiring ``KALAH_JOB_TTL_S`` after the job's creation), shared by every process of
the machine: a job is its input slots, its distinct tasks cut into chunks, and the answers of
finished tasks; a queue of chunks is shared by every process.

Every server process runs one runner thread (:func:`kalah_service.jobs.runner.start_in_server`) on
this store: it takes the next chunk under a lease (twice the chunk's budget plus 10 s),
analyses its tasks with the process's analyser (the engine lock lets interactive requests in
between tasks) and stores them in one transaction that counts the chunk once. A chunk whose
lease lapses (its process died) is taken again first, without the tasks answered already;
lost :data:`~kalah_service.jobs.store.MAX_ATTEMPTS` times in a row, the task in hand gets a problem
and the chunk goes on.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

import diskcache

from ..core.problems import problem_object
from ..core.reply import dumps
from ..core.request import AnalysisRequest
from ..stores.walbound import BoundedCache, WalBound
from .items import Batch, TaskJson, slot_json
from .store import MAX_ATTEMPTS, UNFINISHED, Completed, JobStatus, Lease, lost_problem

log = logging.getLogger(__name__)

QUEUE = "queue"
"""A list of [job id, chunk] waiting for a runner."""
WAL_BOUND = 64 * 1024 * 1024
"""Sizes the jobs' write-ahead log (its share: a quarter, 16 MiB; see
:class:`~kalah_service.stores.walbound.WalBound`). The jobs themselves are never evicted: only the
log is bounded, which without it grows with every write of several processes."""
LEASES = "leases"
"""{"<job>:<chunk>": [expires (unix time), attempts, token]} of chunks being run."""
IDLE_POLL_S = 0.2
LEASE_GRACE_S = 10.0
"""A chunk's lease is twice its budget plus this (it is not renewed): then its runner is
taken for dead."""


class _Meta(TypedDict):
    """A job's record (``job:<id>:meta``)."""

    status: str
    total: int
    done: int
    """Slots answered (problems included)."""
    chunks: int
    finished: list[int]
    """The chunks counted as finished."""
    created: float
    error: str | None
    owner: str
    payer: str
    search_ms: float


class _Chunk(TypedDict):
    """A chunk as stored (``job:<id>:chunk:<n>``): its tasks and the batch's slots they
    answer."""

    tasks: list[TaskJson]
    slots: int


class EmbeddedJobStore:
    """Jobs in a diskcache folder shared by every process of the machine."""

    errors: tuple[type[Exception], ...] = (diskcache.Timeout, sqlite3.Error, OSError)
    """A lock held too long, a full disk (``sqlite3.OperationalError``), a corrupt file
    (``sqlite3.DatabaseError``)."""
    in_server = True

    def __init__(
        self, directory: str | os.PathLike[str], *, ttl_s: int, wal_bound: int = WAL_BOUND
    ) -> None:
        self.directory = Path(directory)
        self.ttl_s = ttl_s
        self.wal_bound = wal_bound
        self._store: tuple[int, diskcache.Cache] | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> diskcache.Cache:
        opened = self._store
        if opened is None or opened[0] != os.getpid():
            with self._lock:
                opened = self._store
                if opened is None or opened[0] != os.getpid():
                    self.directory.mkdir(parents=True, exist_ok=True)
                    # eviction "none": the bound's size limit never culls a job
                    cache = BoundedCache(
                        str(self.directory),
                        bound=WalBound(self.directory, self.wal_bound),
                        eviction_policy="none",
                        timeout=5,
                    )
                    opened = self._store = (os.getpid(), cache)
        return opened[1]

    # -- creating and reading a job (the API) ------------------------------------------------

    def create(self, batch: Batch, chunk_size: int, owner: str, payer: str = "") -> JobStatus:
        job_id = uuid.uuid4().hex
        chunks = batch.chunks(chunk_size)
        problems = batch.problems
        status = "queued" if chunks else "finished"
        meta: _Meta = {
            "status": status,
            "total": len(batch.slots),
            "done": problems,
            "chunks": len(chunks),
            "finished": [],
            "created": time.time(),
            "error": None,
            "owner": owner,
            "payer": payer,
            "search_ms": 0.0,
        }
        slots = [
            {"p": s.problem} if s.task is None else {"t": s.task, "f": s.first} for s in batch.slots
        ]
        store, ttl = self.store, self.ttl_s
        with store.transact():
            store.set(f"job:{job_id}:meta", meta, expire=ttl)
            store.set(f"job:{job_id}:items", slots, expire=ttl)
            for n, chunk in enumerate(chunks):
                body: _Chunk = {"tasks": chunk.tasks, "slots": chunk.slots}
                store.set(f"job:{job_id}:chunk:{n}", body, expire=ttl)
            queue: list[list[Any]] = store.get(QUEUE, [])
            store.set(QUEUE, queue + [[job_id, n] for n in range(len(chunks))])
        return JobStatus(job_id, status, problems, len(batch.slots), None, owner)

    def status(self, job_id: str) -> JobStatus | None:
        meta: _Meta | None = self.store.get(f"job:{job_id}:meta")
        if meta is None:
            return None
        return JobStatus(
            job_id, meta["status"], meta["done"], meta["total"], meta["error"], meta["owner"]
        )

    def results(self, job_id: str, offset: int, limit: int) -> list[bytes]:
        """Slots ``offset .. offset+limit-1``: an answer, a problem, or ``null`` until ready."""
        store = self.store
        slots: list[dict[str, Any]] = store.get(f"job:{job_id}:items", [])
        return [
            slot_json(slot["p"], None, True)
            if "p" in slot
            else slot_json(None, store.get(f"job:{job_id}:result:{slot['t']}"), slot["f"])
            for slot in slots[offset : offset + limit]
        ]

    def cancel(self, job_id: str) -> JobStatus | None:
        store = self.store
        with store.transact():
            meta: _Meta | None = store.get(f"job:{job_id}:meta")
            if meta is None:
                return None
            if meta["status"] in UNFINISHED:
                meta["status"] = "cancelled"
                store.set(f"job:{job_id}:meta", meta, expire=self.ttl_s)
        return self.status(job_id)

    def unfinished_of(self, owner: str) -> int:
        store = self.store
        leases: dict[str, Any] = store.get(LEASES, {})
        queue: list[list[Any]] = store.get(QUEUE, [])
        jobs = {entry[0] for entry in queue} | {name.rsplit(":", 1)[0] for name in leases}
        metas: list[_Meta | None] = [store.get(f"job:{job}:meta") for job in jobs]
        return sum(
            1 for m in metas if m is not None and m["owner"] == owner and m["status"] in UNFINISHED
        )

    def workers(self) -> None:
        """None: this server's own processes run the jobs."""
        return None

    def stalled(self) -> str | None:
        """Never: the server's own processes run these jobs."""
        return None

    def probe(self) -> None:
        self.store.set("probe", time.time(), expire=60)

    def unfinished(self) -> int:
        leases: dict[str, Any] = self.store.get(LEASES, {})
        queue: list[list[Any]] = self.store.get(QUEUE, [])
        return len({job for job, _ in queue} | {name.rsplit(":", 1)[0] for name in leases})

    # -- running chunks (every server process) -----------------------------------------------

    def take(self, worker: str) -> Lease | None:
        """The next chunk to run, leased to ``worker``; a lapsed lease is taken again first,
        without the tasks already answered. A chunk that lost its runner
        :data:`~kalah_service.jobs.store.MAX_ATTEMPTS` times (an item that kills its process) gives
        its first unanswered task a problem and goes on with the others; a malformed chunk
        fails its job."""
        store = self.store
        if not self.pending():  # a read: no write lock while idle
            return None
        now = time.time()
        with store.transact():
            leases: dict[str, list[Any]] = store.get(LEASES, {})
            queue: list[list[Any]] = store.get(QUEUE, [])
            for name, (expires, attempts, _) in list(leases.items()):
                if expires < now:
                    job_id, n = name.rsplit(":", 1)
                    del leases[name]
                    if attempts >= MAX_ATTEMPTS:
                        attempts = self._poisoned(job_id, int(n), attempts)
                    else:
                        log.warning("job %s: chunk %s lost its worker; taken again", job_id, n)
                    queue.insert(0, [job_id, int(n), attempts])
            while queue:
                job_id, n, *before = queue.pop(0)
                chunk: _Chunk | None = store.get(f"job:{job_id}:chunk:{n}")
                meta: _Meta | None = store.get(f"job:{job_id}:meta")
                if chunk is None or meta is None or meta["status"] not in UNFINISHED:
                    continue
                try:
                    tasks = [(t["t"], AnalysisRequest.from_json(t)) for t in chunk["tasks"]]
                    budget_s = sum(t["limits"]["time_ms"] for t in chunk["tasks"]) / 1000
                except Exception as error:  # not the store failing: this chunk is unreadable
                    log.error("job %s: chunk %s is malformed (%r); the job fails", job_id, n, error)
                    self._fail(job_id, f"chunk {n} is malformed")
                    continue
                attempt = (before[0] if before else 0) + 1
                if attempt > 1 or before:  # taken over: the answers stored so far stand
                    tasks = [(t, r) for t, r in tasks if f"job:{job_id}:result:{t}" not in store]
                leases[f"{job_id}:{n}"] = [now + 2 * budget_s + LEASE_GRACE_S, attempt, worker]
                if meta["status"] == "queued":
                    meta["status"] = "running"
                    store.set(f"job:{job_id}:meta", meta, expire=self.ttl_s)
                store.set(QUEUE, queue)
                store.set(LEASES, leases)
                return Lease(job_id, int(n), worker, tasks, meta.get("payer", ""), attempt)
            store.set(QUEUE, queue)
            store.set(LEASES, leases)
        return None

    def _poisoned(self, job_id: str, n: int, attempts: int) -> int:
        """Chunk ``n`` lost its runner ``attempts`` times: its first unanswered task (the one
        in hand each time, answers being stored as they come) gets a problem, and the chunk
        goes on with its other tasks; the attempts to count from (0)."""
        store = self.store
        chunk: _Chunk | None = store.get(f"job:{job_id}:chunk:{n}")
        if chunk is None:
            return 0
        for task in chunk["tasks"]:
            if f"job:{job_id}:result:{task['t']}" not in store:
                log.error(
                    "job %s: chunk %d lost its worker %d times on task %s; the task gets a "
                    "problem, the chunk goes on",
                    job_id,
                    n,
                    attempts,
                    task["t"],
                )
                body = dumps(problem_object(lost_problem(attempts)))
                self._store_answers(job_id, chunk, [(task["t"], body)], 0.0)
                break
        return 0

    def _store_answers(
        self,
        job_id: str,
        chunk: _Chunk,
        answers: list[tuple[int, bytes]],
        search_ms: float,
    ) -> _Meta | None:
        """Store answers (in a transaction of the caller's): progress counts the slots of
        each task answered for the first time, and the search they ran is recorded."""
        store, ttl = self.store, self.ttl_s
        meta: _Meta | None = store.get(f"job:{job_id}:meta")
        if meta is None:
            return None
        slots = {t["t"]: t.get("n", 1) for t in chunk["tasks"]}
        for task, body in answers:
            key = f"job:{job_id}:result:{task}"
            if key not in store:
                meta["done"] += slots.get(task, 1)
            store.set(key, body, expire=ttl)
        meta["search_ms"] = meta.get("search_ms", 0.0) + search_ms
        store.set(f"job:{job_id}:meta", meta, expire=ttl)
        return meta

    def renew(self, lease: Lease) -> bool:
        """Whether to go on: the job is still queued or running (the lease is long enough for
        the whole chunk, so it is not extended)."""
        meta: _Meta | None = self.store.get(f"job:{lease.job_id}:meta")
        return meta is not None and meta["status"] in UNFINISHED

    def complete(self, lease: Lease, done: Completed) -> bool:
        """Store a chunk's answers (whatever the job's state: the results so far stay
        readable, and progress counts them) and count the chunk, once; True if this call
        counted it."""
        job_id, n = lease.job_id, lease.chunk
        store, ttl = self.store, self.ttl_s
        with store.transact():
            chunk: _Chunk | None = store.get(f"job:{job_id}:chunk:{n}")
            if chunk is None:
                return False
            meta = self._store_answers(job_id, chunk, done.answers, done.search_ms)
            if meta is None:
                return False
            running = meta["status"] in UNFINISHED
            if done.more or (running and not done.whole):
                return False  # a partial chunk: its lease stays (more follow, or taken again)
            leases: dict[str, list[Any]] = store.get(LEASES, {})
            leases.pop(f"{job_id}:{n}", None)
            store.set(LEASES, leases)
            if not running or n in meta["finished"]:
                return False
            meta["finished"].append(n)
            if len(meta["finished"]) == meta["chunks"]:
                meta["status"] = "finished"
            store.set(f"job:{job_id}:meta", meta, expire=ttl)
        return True

    def wait(self, timeout_s: float, worker: str | None = None) -> None:
        time.sleep(min(timeout_s, IDLE_POLL_S))

    def pending(self) -> bool:
        return bool(self.store.get(QUEUE)) or bool(self.store.get(LEASES))

    def beat(self, worker: str) -> None:
        """Nothing: the server's processes run the jobs while the server runs."""

    def leave(self, worker: str) -> None:
        """Nothing (see :meth:`beat`)."""

    def _fail(self, job_id: str, error: str) -> None:
        meta: _Meta | None = self.store.get(f"job:{job_id}:meta")
        if meta is not None:
            meta.update({"status": "failed", "error": error})
            self.store.set(f"job:{job_id}:meta", meta, expire=self.ttl_s)
