"""Batch jobs without Redis: run by the server's own processes, kept in the embedded store.

The same API as :class:`~api.batch.jobs.JobStore` (``create``, ``status``, ``results``), on
a ``diskcache`` folder of its own (``<answer store>-jobs``: never evicted, each key
expiring ``KALAH_JOB_TTL_S`` after the job's creation). A job is its input slots, its
distinct tasks cut into chunks, and the answers of finished tasks; a queue of chunks is
shared by every process of the machine.

Every server process runs one :class:`JobRunner` thread (started with the first job it sees
or creates): it takes the next chunk under a lease (twice the chunk's budget plus 10 s),
analyses its tasks through the process's :class:`~api.core.analyser.Analyser` (the
``/v1/analysis`` code path: same cache, same answers; the engine lock lets interactive
requests in between tasks) and stores them in one transaction that counts the chunk once.
A chunk whose lease lapses (its process died) is queued again, at most
:data:`~api.batch.jobs.MAX_ATTEMPTS` times.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import diskcache

from kalah_core.databases import cache_dir

from ..config import Settings
from ..core.analyser import Analyser
from ..core.answer import as_cached
from ..core.request import AnalysisRequest
from .items import Batch
from .jobs import MAX_ATTEMPTS, JobStatus, JobStore, job_store

log = logging.getLogger("api.batch.embedded")

QUEUE = "queue"
"""A list of [job id, chunk] waiting for a runner."""
LEASES = "leases"
"""{"<job>:<chunk>": [expires (unix time), attempts]} of chunks being run."""
IDLE_POLL_S = 0.2


class EmbeddedJobStore:
    """Jobs in a diskcache folder shared by every process of the machine."""

    def __init__(self, directory: str | os.PathLike[str], *, ttl_s: int) -> None:
        self.directory = Path(directory)
        self.ttl_s = ttl_s
        self._store: tuple[int, diskcache.Cache] | None = None
        self._lock = threading.Lock()
        self._runner: tuple[int, JobRunner] | None = None

    @property
    def store(self) -> diskcache.Cache:
        opened = self._store
        if opened is None or opened[0] != os.getpid():
            with self._lock:
                opened = self._store
                if opened is None or opened[0] != os.getpid():
                    self.directory.mkdir(parents=True, exist_ok=True)
                    cache = diskcache.Cache(str(self.directory), eviction_policy="none", timeout=5)
                    opened = self._store = (os.getpid(), cache)
        return opened[1]

    def run_with(self, analyser: Analyser) -> None:
        """Start this process's runner thread (once per process)."""
        runner = self._runner
        if runner is not None and runner[0] == os.getpid():
            return
        with self._lock:
            if self._runner is None or self._runner[0] != os.getpid():
                self._runner = (os.getpid(), JobRunner(self, analyser))

    # -- creating and reading a job (the API) ------------------------------------------------

    def create(self, batch: Batch, chunk_size: int, owner: str) -> JobStatus:
        job_id = uuid.uuid4().hex
        chunks = batch.chunks(chunk_size)
        problems = batch.problems
        status = "queued" if chunks else "finished"
        meta = {
            "status": status,
            "total": len(batch.slots),
            "done": problems,
            "chunks": len(chunks),
            "finished": [],
            "created": time.time(),
            "error": None,
            "owner": owner,
        }
        slots = [
            {"p": s.problem} if s.task is None else {"t": s.task, "f": s.first} for s in batch.slots
        ]
        store, ttl = self.store, self.ttl_s
        with store.transact():
            store.set(f"job:{job_id}:meta", meta, expire=ttl)
            store.set(f"job:{job_id}:items", slots, expire=ttl)
            for n, chunk in enumerate(chunks):
                body = {"tasks": chunk.tasks, "slots": chunk.slots}
                store.set(f"job:{job_id}:chunk:{n}", body, expire=ttl)
            queue: list[list[Any]] = store.get(QUEUE, [])
            store.set(QUEUE, queue + [[job_id, n] for n in range(len(chunks))])
        return JobStatus(job_id, status, problems, len(batch.slots), None, owner)

    def status(self, job_id: str) -> JobStatus | None:
        meta: dict[str, Any] | None = self.store.get(f"job:{job_id}:meta")
        if meta is None:
            return None
        return JobStatus(
            job_id, meta["status"], meta["done"], meta["total"], meta["error"], meta["owner"]
        )

    def results(self, job_id: str, offset: int, limit: int) -> list[bytes]:
        """Slots ``offset .. offset+limit-1``: an answer, a problem, or ``null`` until ready."""
        store = self.store
        slots: list[dict[str, Any]] = store.get(f"job:{job_id}:items", [])
        out: list[bytes] = []
        for slot in slots[offset : offset + limit]:
            if "p" in slot:
                out.append(json.dumps(slot["p"], separators=(",", ":")).encode())
                continue
            body: bytes | None = store.get(f"job:{job_id}:result:{slot['t']}")
            out.append(b"null" if body is None else body if slot["f"] else as_cached(body))
        return out

    # -- running chunks (every server process) -----------------------------------------------

    def take(self) -> tuple[str, int, list[tuple[int, AnalysisRequest]]] | None:
        """The next chunk to run, leased to the caller; a lapsed lease is queued again first."""
        store = self.store
        if not self.pending():  # a read: no write lock while idle
            return None
        now = time.time()
        with store.transact():
            leases: dict[str, list[Any]] = store.get(LEASES, {})
            queue: list[list[Any]] = store.get(QUEUE, [])
            for name, (expires, attempts) in list(leases.items()):
                if expires < now:
                    job_id, n = name.rsplit(":", 1)
                    if attempts >= MAX_ATTEMPTS:
                        del leases[name]
                        self._fail(job_id, f"chunk {n} lost its worker {attempts} times")
                    else:
                        log.warning("job %s: chunk %s lost its worker; queued again", job_id, n)
                        queue.insert(0, [job_id, int(n)])
            while queue:
                job_id, n = queue.pop(0)
                chunk: dict[str, Any] | None = store.get(f"job:{job_id}:chunk:{n}")
                meta: dict[str, Any] | None = store.get(f"job:{job_id}:meta")
                if chunk is None or meta is None or meta["status"] == "failed":
                    continue
                budget_s = sum(t["limits"]["time_ms"] for t in chunk["tasks"]) / 1000
                attempts = leases.get(f"{job_id}:{n}", [0, 0])[1] + 1
                leases[f"{job_id}:{n}"] = [now + 2 * budget_s + 10, attempts]
                if meta["status"] == "queued":
                    meta["status"] = "running"
                    store.set(f"job:{job_id}:meta", meta, expire=self.ttl_s)
                store.set(QUEUE, queue)
                store.set(LEASES, leases)
                return job_id, n, [(t["t"], AnalysisRequest.from_json(t)) for t in chunk["tasks"]]
            store.set(QUEUE, queue)
            store.set(LEASES, leases)
        return None

    def complete(self, job_id: str, n: int, answers: list[tuple[int, bytes]]) -> bool:
        """Store a chunk's answers and count it, once; False if it was counted already."""
        store, ttl = self.store, self.ttl_s
        with store.transact():
            leases: dict[str, list[Any]] = store.get(LEASES, {})
            leases.pop(f"{job_id}:{n}", None)
            store.set(LEASES, leases)
            meta: dict[str, Any] | None = store.get(f"job:{job_id}:meta")
            chunk: dict[str, Any] | None = store.get(f"job:{job_id}:chunk:{n}")
            if meta is None or chunk is None or n in meta["finished"]:
                return False
            for task, body in answers:
                store.set(f"job:{job_id}:result:{task}", body, expire=ttl)
            meta["finished"].append(n)
            meta["done"] += chunk["slots"]
            if len(meta["finished"]) == meta["chunks"] and meta["status"] != "failed":
                meta["status"] = "finished"
            store.set(f"job:{job_id}:meta", meta, expire=ttl)
        return True

    def stalled(self) -> str | None:
        """Never: the server's own processes run these jobs."""
        return None

    def pending(self) -> bool:
        return bool(self.store.get(QUEUE)) or bool(self.store.get(LEASES))

    def _fail(self, job_id: str, error: str) -> None:
        meta: dict[str, Any] | None = self.store.get(f"job:{job_id}:meta")
        if meta is not None:
            meta.update(status="failed", error=error)
            self.store.set(f"job:{job_id}:meta", meta, expire=self.ttl_s)


class JobRunner:
    """One thread per server process running queued chunks with the process's analyser."""

    def __init__(self, jobs: EmbeddedJobStore, analyser: Analyser) -> None:
        self.jobs = jobs
        self.analyser = analyser
        self.thread = threading.Thread(target=self._run, name="embedded-jobs", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                taken = self.jobs.take()
            except Exception:  # a locked or damaged store: try again later
                log.exception("embedded job queue unavailable")
                taken = None
            if taken is None:
                time.sleep(IDLE_POLL_S)
                continue
            job_id, n, tasks = taken
            answers = [(index, self.analyser.analyse_item(task)) for index, task in tasks]
            self.jobs.complete(job_id, n, answers)


def make_job_store(settings: Settings) -> JobStore | EmbeddedJobStore:
    """Jobs in the state Redis (``KALAH_STATE_REDIS_URL``, else ``KALAH_REDIS_URL``; run by
    ``kalah worker``), or without one in the embedded store beside the answers (run by the
    server's own processes)."""
    if settings.state_url:
        return job_store(settings, timeout_s=settings.redis_timeout_s)
    answers = Path(settings.cache_dir) if settings.cache_dir else cache_dir() / "answers"
    return EmbeddedJobStore(answers.parent / (answers.name + "-jobs"), ttl_s=settings.job_ttl_s)
