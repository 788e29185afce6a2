"""The job store: one interface for the two places batch jobs live.

A job is its input slots (each names a distinct task or holds a problem), the distinct tasks
cut into chunks, and the answers of finished tasks. The API creates jobs, reads them and
cancels them; runners (:mod:`.runner`: ``kalah worker`` processes, or the server's own
processes) take chunks under a lease, renew it while they work, and complete them.

Two stores implement :class:`JobStore`:

- :class:`~kalah_service.jobs.redis_jobs.RedisJobStore`, in the state Redis, run by ``kalah worker``
  processes on any number of machines; its queue is its own fair queue (owners served
  round-robin, a lapsed lease taken again first), not a separate queue library;
- :class:`~kalah_service.jobs.embedded_jobs.EmbeddedJobStore`, in a ``diskcache`` folder beside the
  answers, run by a thread of each server process (no Redis).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kalah_core.tasks import Json, Task

from ..core.problems import ApiProblem
from ..core.request import AnalysisRequest
from .items import Batch

MAX_ATTEMPTS = 3
"""A chunk whose runner died this many times in a row gives the task in hand (its first
unanswered one: answers are stored as they come) a problem and goes on with the others: an
item that kills its process fails alone."""

STATUSES = ("queued", "running", "finished", "failed", "cancelled")
"""A job's status: no chunk started; started; every result there; a chunk could not be run
(malformed, or engine work lost :data:`MAX_ATTEMPTS` times); cancelled by its owner (the
results so far stay readable)."""

UNFINISHED = ("queued", "running")

MAX_UNFINISHED_JOBS = 4
"""A caller may have this many jobs queued or running at once; a new one is a 429 until one
finishes (or is cancelled). With jobs no longer paid up front, this bounds what one caller
keeps in the state store and in the queue."""


@dataclass(frozen=True, slots=True)
class JobStatus:
    id: str
    status: str
    done: int
    total: int
    error: str | None
    owner: str = ""


@dataclass(frozen=True, slots=True)
class Lease:
    """A chunk a runner took: run its tasks, renew the lease meanwhile, then complete it."""

    job_id: str
    chunk: int
    token: str
    tasks: list[tuple[int, AnalysisRequest]]
    payer: str = ""
    """Whom the chunk's search is charged to (:func:`kalah_service.edge.charging.payer` as text;
    empty: nobody, e.g. limits off)."""
    attempt: int = 1
    work: Task | None = None
    """A chunk of engine work (:mod:`kalah_core.tasks`, e.g. a book build's boards) instead of
    analyses: its ``items`` (index, JSON item) are run by the task's function, and each
    item's result is stored as it comes (a lost runner costs only the item in hand)."""
    items: list[tuple[int, Json]] = field(default_factory=list)


@dataclass(slots=True)
class Completed:
    """What a chunk's runner hands back: each task's answer, and the search it ran."""

    answers: list[tuple[int, bytes]] = field(default_factory=list)
    search_ms: float = 0.0
    whole: bool = True
    """False when the runner stopped early (the job was cancelled, the lease lost)."""
    more: bool = False
    """True for answers stored while the chunk runs on (more follow): the lease stays, even
    for a job that is over, until the runner hands back the rest (its in-hand search is
    charged before, so a chunk without a lease has charged everything)."""


def lost_problem(attempts: int) -> ApiProblem:
    """The problem of a task whose analysis ended its runner ``attempts`` times in a row."""
    return ApiProblem(
        "internal-error",
        f"analysing this position stopped its batch worker {attempts} times; the batch's "
        "other items are not affected",
    )


def stalled_reason(workers: int | None, stale_s: float) -> str | None:
    """Why queued jobs cannot run with ``workers`` runners alive (None: the server's own
    processes run them), or None."""
    if workers is None or workers:
        return None
    return (
        f"no batch worker has reported in the last {stale_s:.0f} s: start one (kalah worker) "
        "and try again"
    )


class JobStore(Protocol):
    """Where jobs live and how runners take their chunks (see the module docstring)."""

    errors: tuple[type[Exception], ...]
    """What this store raises when it fails (Redis down or answering errors; a lock held too
    long, a full disk, a corrupt file). The API answers each with a 503 problem
    (docs/deploy.md, "Store faults"), never a 500."""

    in_server: bool
    """True when the server's own processes run the jobs (no ``kalah worker``): a job then
    belongs to the caller's address when it sends no key, and needs no key."""

    # -- the API ---------------------------------------------------------------------------

    def create(self, batch: Batch, chunk_size: int, owner: str, payer: str = "") -> JobStatus:
        """A new job of ``owner``, its chunks waiting for the runners."""
        ...

    def status(self, job_id: str) -> JobStatus | None: ...

    def results(self, job_id: str, offset: int, limit: int) -> list[bytes]:
        """The JSON of slots ``offset .. offset+limit-1``: an analysis answer, a problem
        object, or ``null`` while its task has no answer."""
        ...

    def cancel(self, job_id: str) -> JobStatus | None:
        """Cancel an unfinished job (a finished, failed or cancelled one stays as it is); its
        status after, or None for no such job."""
        ...

    def unfinished_of(self, owner: str) -> int:
        """How many of ``owner``'s jobs are queued or running."""
        ...

    def workers(self) -> int | None:
        """How many runners are alive; None when the server's own processes run the jobs."""
        ...

    def stalled(self) -> str | None:
        """Why queued jobs cannot run now (no runner alive), or None."""
        ...

    def unfinished(self) -> int:
        """How many jobs have chunks not yet finished."""
        ...

    def probe(self) -> None:
        """Write to the store (``/readyz``): raises one of :attr:`errors` when that
        fails (a full disk still reads)."""
        ...

    # -- the runners -----------------------------------------------------------------------

    def take(self, worker: str) -> Lease | None:
        """The next chunk to run, leased to ``worker``: a chunk whose lease lapsed (its
        runner died) first, else the next chunk of the next owner (owners round-robin);
        None when there is none."""
        ...

    def renew(self, lease: Lease) -> bool:
        """Extend the lease; False when the runner should stop (the job was cancelled or is
        gone, or the lease went to another runner)."""
        ...

    def complete(self, lease: Lease, done: Completed) -> bool:
        """Store the answers and count the chunk, once; True when this call counted it (and
        its search is to be charged)."""
        ...

    def wait(self, timeout_s: float, worker: str | None = None) -> None:
        """Block until a chunk may be waiting (for anyone, or left for ``worker``: its lease
        token), or ``timeout_s`` passed."""
        ...

    def pending(self) -> bool:
        """Whether chunks wait or run (a burst runner stops when none do)."""
        ...

    def beat(self, worker: str) -> None:
        """Runner ``worker`` is alive."""
        ...

    def leave(self, worker: str) -> None:
        """Runner ``worker`` stops (a clean exit; a dead one goes stale)."""
        ...
