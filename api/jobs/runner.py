"""The one loop that runs batch work: analyse each task, turn its error into a problem.

- :func:`answer_one` is the only place a batch analyses an item: the ``/v1/analysis`` code
  path (:meth:`Analyser.analyse`: the same cache and the same answer), an error becoming the
  item's problem object (as :meth:`Analyser.analyse_item`, keeping the search time, which a
  job's runner charges to the job's payer). Any error, a bug in the engine too, is that one
  item's problem: a bad item fails alone.
- :func:`answer_all` runs it over a list of tasks; inline batches, ``kalah batch`` (in each of
  its processes) and the job runners below all call it.
- :func:`run_work` runs a chunk of engine work instead (:mod:`kalah_core.tasks`: a book
  build's boards, see :mod:`.work`), storing each item's result as it comes.
- :func:`serve` is the job runners' loop over any :class:`~kalah_service.jobs.store.JobStore`: take
  a chunk, answer it while renewing its lease (stopping early when the job is cancelled),
  storing each answer and charging its search to the job's payer as it comes (so a chunk
  cancelled, failed or lost is charged for every search it ran, a runner killed by an item
  loses only that item, and ``progress`` counts every readable result), then complete it;
  wait on the store when there is nothing to do. Any error of the store (Redis unreachable,
  timing out, full, a locked diskcache) is logged and waited out with a growing pause, never
  fatal: ``kalah worker`` runs it in its main thread, every server process without Redis in a
  thread of its own (:func:`start_in_server`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from kalah_core import book_build, deepbook_build, deepbook_refine
from kalah_core import tasks as work
from kalah_core.errors import KalahError

from ..core.analyser import Analyser
from ..core.problems import ApiProblem, problem_object
from ..core.reply import dumps
from ..core.request import AnalysisRequest
from ..stores.lease import owner_token, renewing
from .store import Completed, JobStore, Lease

log = logging.getLogger(__name__)

ENGINE_WORK = (book_build, deepbook_build, deepbook_refine)
"""The engine modules whose task kinds (:func:`kalah_core.tasks.task`) a runner runs: importing
them registers their kinds."""

RELEASE_AFTER_S = 60.0
"""A runner idle this long drops the state engine work keeps (a book's table): not between
the passes of a build, a few seconds apart."""

HEARTBEAT_S = 1.0
"""How often a runner renews its chunk's lease (and learns of a cancellation)."""
PAUSE_S = 0.5
PAUSE_MAX_S = 5.0
"""After an error of the store, a runner tries again after this pause, doubling up to the
maximum."""


@dataclass(frozen=True, slots=True)
class Answered:
    """One task's answer (or problem object) and the search it ran (0: cached, or a
    problem)."""

    body: bytes
    search_ms: float = 0.0


def answer_one(analyser: Analyser, task: AnalysisRequest) -> Answered:
    """The answer to one batch item, or its problem object: whatever the item does (a bad
    input, or a bug raising inside the engine), it fails alone."""
    started = time.perf_counter()
    try:
        answer = analyser.analyse(task)
    except (ApiProblem, KalahError) as error:
        return Answered(dumps(problem_object(error)))
    except Exception as error:  # a bug: this item's problem, not its batch's or its chunk's
        # What it ran, at most its budget (as a search that returns is charged).
        spent_ms = min((time.perf_counter() - started) * 1000, task.limits.time_ms)
        log.exception("analysing %s failed", task.position.compact_or_repr())
        problem = ApiProblem(
            "internal-error",
            f"analysing this position failed ({type(error).__name__}); the batch's other "
            "items are not affected",
        )
        return Answered(dumps(problem_object(problem)), spent_ms)
    return Answered(answer.body(), answer.search_ms)


def answer_all(
    analyser: Analyser,
    tasks: Sequence[AnalysisRequest],
    stop: threading.Event | None = None,
) -> Iterator[Answered]:
    """Each task's answer in order; with ``stop``, none after it is set."""
    for task in tasks:
        if stop is not None and stop.is_set():
            return
        yield answer_one(analyser, task)


Bill = Callable[[str, float], None]
"""Charges a payer (a job's, :class:`Lease.payer`) for ``search_ms`` of search."""


def run_chunk(
    store: JobStore,
    analyser: Analyser,
    lease: Lease,
    stopping: threading.Event,
    charge: Callable[[float], None] | None = None,
) -> Completed:
    """Answer a leased chunk, renewing its lease; stops early (a partial chunk) when the store
    says so (the job was cancelled, the lease lost) or the runner is stopping hard.

    Each search is charged (``charge``) as soon as it ran and each answer stored as it comes
    (a partial completion), whatever becomes of the chunk: cancelled, lost or failed, it has
    paid for every search it ran and its results so far are readable and counted. What is
    returned is what is still to be stored (the last answer, or one whose storing failed)."""
    if lease.work is not None:
        return run_work(store, lease, stopping)
    stop = threading.Event()

    def renew() -> None:
        if not store.renew(lease):
            stop.set()
        if stopping.is_set():
            stop.set()

    pending = Completed(whole=False, more=True)
    count = 0
    with renewing(renew, f"chunk {lease.chunk} of job {lease.job_id}", HEARTBEAT_S):
        for (index, _), answered in zip(
            lease.tasks, answer_all(analyser, [task for _, task in lease.tasks], stop), strict=False
        ):
            count += 1
            if charge is not None and answered.search_ms > 0:
                try:
                    charge(answered.search_ms)
                except Exception:  # the charge is lost, the job is not
                    log.exception("charging a search of job %s failed", lease.job_id)
            pending.answers.append((index, answered.body))
            pending.search_ms += answered.search_ms
            if count == len(lease.tasks) or stop.is_set():
                break
            try:
                store.complete(lease, pending)
                pending = Completed(whole=False, more=True)
            except Exception as error:  # kept for the next completion
                log.warning("storing a result of job %s failed: %s", lease.job_id, error)
    pending.whole, pending.more = count == len(lease.tasks), False
    return pending


def run_work(store: JobStore, lease: Lease, stopping: threading.Event) -> Completed:
    """Run a leased chunk of engine work (:mod:`kalah_core.tasks`, e.g. a book build's boards),
    renewing its lease, and store each item's result as it comes (a partial completion): a
    runner killed mid-chunk costs only the item in hand. Stops after the item in hand when
    the store says so or the runner is stopping hard."""
    assert lease.work is not None
    stop = threading.Event()

    kind = lease.work.kind

    def renew() -> None:
        if not store.renew(lease) or stopping.is_set():
            stop.set()
            work.interrupt(kind)  # a kind that can stops its item now (it gives no result)

    indices = [index for index, _ in lease.items]
    pending: list[tuple[int, bytes]] = []
    count = 0
    work.interrupt(kind, False)
    with renewing(renew, f"chunk {lease.chunk} of job {lease.job_id}", HEARTBEAT_S):
        results = work.run(lease.work, [item for _, item in lease.items])
        try:
            for index, result in zip(indices, results, strict=False):
                pending.append((index, json.dumps(result, separators=(",", ":")).encode()))
                count += 1
                if stop.is_set() or count == len(indices):
                    break
                try:
                    store.complete(lease, Completed(pending, whole=False))
                    pending = []
                except Exception as error:  # kept for the next completion
                    log.warning("storing a result of job %s failed: %s", lease.job_id, error)
        except work.Interrupted:  # cancelled, lost or stopping hard: the item has no result
            log.info("chunk %d of job %s interrupted", lease.chunk, lease.job_id)
    return Completed(pending, whole=count == len(indices))


def serve(
    store: JobStore,
    analyser: Analyser,
    *,
    worker: str,
    stop: threading.Event,
    bill: Bill | None = None,
    burst: bool = False,
    hard_stop: threading.Event | None = None,
) -> None:
    """Run chunks of ``store`` until ``stop`` is set (with ``burst``, also once nothing is
    waiting or running). A chunk in hand is finished first, unless ``hard_stop`` is set."""
    pause = PAUSE_S
    done: Completed | None = None
    lease: Lease | None = None
    busy = time.monotonic()  # when the last chunk was completed
    hard = hard_stop or threading.Event()
    while True:
        try:
            if lease is None:
                if stop.is_set():
                    return
                lease = store.take(worker)
                if lease is None:
                    if time.monotonic() - busy > RELEASE_AFTER_S:
                        work.release()  # no engine work's state (a book's table) kept idle
                    if burst and not store.pending():
                        return
                    store.wait(1.0 if burst else 5.0, worker)
                    pause = PAUSE_S
                    continue
            if done is None:
                charge = functools.partial(bill, lease.payer) if bill and lease.payer else None
                try:
                    done = run_chunk(store, analyser, lease, hard, charge)
                except Exception:  # not an item's (each its own problem): a chunk not runnable
                    # Let its lease lapse: another take counts an attempt, and after
                    # MAX_ATTEMPTS the task in hand gets a problem instead of looping here.
                    log.exception("chunk %d of job %s failed", lease.chunk, lease.job_id)
                    lease = None
                    continue
            # Retried until it goes through (a full or unreachable store): the answers are
            # kept, and a chunk counts once however often it is completed. Its searches were
            # charged as they ran.
            store.complete(lease, done)
            lease = done = None
            pause = PAUSE_S
            busy = time.monotonic()
        except Exception as error:  # the store failed: wait and go on where we were
            log.warning(
                "job store unavailable (%s: %s); trying again in %.1f s",
                type(error).__name__,
                error,
                pause,
            )
            if stop.wait(pause) and lease is None:
                return
            pause = min(2 * pause, PAUSE_MAX_S)


_IN_SERVER: dict[tuple[int, int], tuple[threading.Thread, threading.Event]] = {}
_IN_SERVER_LOCK = threading.Lock()


def start_in_server(store: JobStore, analyser: Analyser, bill: Bill | None = None) -> None:
    """This server process's runner thread on ``store`` (started once per process)."""
    key = (os.getpid(), id(store))
    if key in _IN_SERVER:
        return
    with _IN_SERVER_LOCK:
        if key in _IN_SERVER:
            return
        stop = threading.Event()
        thread = threading.Thread(
            target=serve,
            args=(store, analyser),
            kwargs={"worker": owner_token(), "stop": stop, "hard_stop": stop, "bill": bill},
            name="embedded-jobs",
            daemon=True,
        )
        _IN_SERVER[key] = (thread, stop)
        thread.start()


def stop_in_server(timeout_s: float = 10.0) -> int:
    """Stop this process's runner threads (an app that is done with its store: a test's) and
    wait up to ``timeout_s`` for each; returns how many are still running. A chunk in hand is
    abandoned: its lease lapses and another runner takes it up again."""
    with _IN_SERVER_LOCK:
        mine = [key for key in _IN_SERVER if key[0] == os.getpid()]
        runners = [_IN_SERVER.pop(key) for key in mine]
    for _, stop in runners:
        stop.set()
    for thread, _ in runners:
        thread.join(timeout_s)
    return sum(thread.is_alive() for thread, _ in runners)


@contextlib.contextmanager
def beating(store: JobStore, worker: str, every_s: float) -> Iterator[None]:
    """Report ``worker`` alive every ``every_s`` while the block runs (``/readyz`` and the
    API's admission of jobs count the workers alive), and gone at the end."""

    def beat() -> None:
        store.beat(worker)

    with contextlib.suppress(Exception):
        beat()
    try:
        with renewing(beat, f"worker {worker}", every_s):
            yield
    finally:
        with contextlib.suppress(Exception):  # else it goes stale by itself
            store.leave(worker)
