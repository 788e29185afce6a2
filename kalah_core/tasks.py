"""Work the engine hands out: a named pure function mapped over items, on an executor.

A long computation of the engine (a book build's boards) is a :class:`Task`, the *kind* of a
function registered here with :func:`task` and the JSON parameters it shares across items,
mapped over a list of JSON items (e.g. boards in hex). The function yields one JSON result
per item, in order, and is pure: the same item and parameters give the same result on any
machine (per-process state, a warm engine, is its own business). That makes the place it runs
a detail:

- :class:`LocalExecutor`: this process, or a pool of spawned processes (``workers``);
- the service's Redis executor (``kalah_service``, found by name through the
  ``kalah.executors`` entry points, since the engine never imports the service): the chunks go
  to the project's Redis job queue, any number of ``kalah worker`` processes on any number of
  machines run them (with :func:`run`), and the results come back as each item is solved.

An executor yields the results as they come, in batches of ``(index, result)`` (``index``: the
item's place in the list), in any order; closing its iterator early stops the work it still
holds. Only registered kinds run, so a queue entry names code of this package, never any
code.

A :class:`Session` is the finer way in, for work decided item by item (a proof's tests):
:meth:`Executor.session` opens one for a kind, which takes items one at a time
(:meth:`Session.submit`), runs at most :attr:`Session.capacity` of them at once, gives their
results as they come (:meth:`Session.wait`) and stops an item it no longer wants
(:meth:`Session.cancel`). A local session's processes live as long as the session (not one
pool a batch). A kind registered with an ``interrupt`` hook can be stopped mid-item: the hook
interrupts its search from another thread and the item raises :class:`Interrupted`, giving no
result (an interrupted search's outcome is not the item's pure result); a kind without one
runs its item to the end, and its result counts like any other.
"""

from __future__ import annotations

import heapq
import json
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from importlib import import_module, metadata
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol, TypeAlias

Json: TypeAlias = Any
"""A JSON value (what json.dumps takes and json.loads gives)."""

TaskFunction = Callable[[dict[str, Json], Sequence[Json]], Iterator[Json]]
"""A task's function: (parameters, items) -> one result per item, in order."""

EXECUTORS_GROUP = "kalah.executors"
"""Entry points naming a factory ``(url: str) -> Executor`` (the service's: ``redis``)."""

_REGISTRY: dict[str, TaskFunction] = {}
_RELEASE: dict[str, Callable[[], None]] = {}
_INTERRUPT: dict[str, Callable[[bool], None]] = {}
_GROUP: dict[str, Callable[[dict[str, Json], Json], Json]] = {}


class Interrupted(Exception):
    """An item stopped by :func:`interrupt` before its end: it has no result."""


@dataclass(frozen=True)
class Task:
    """A registered function (its ``kind``) and the parameters every item shares."""

    kind: str
    params: dict[str, Json] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        return {"kind": self.kind, "params": self.params}

    @classmethod
    def from_json(cls, data: dict[str, Json]) -> Task:
        return cls(str(data["kind"]), dict(data["params"]))


def task(
    kind: str,
    release: Callable[[], None] | None = None,
    interrupt: Callable[[bool], None] | None = None,
    group: Callable[[dict[str, Json], Json], Json] | None = None,
) -> Callable[[TaskFunction], TaskFunction]:
    """Register a function under ``kind`` (a decorator); ``release`` drops the state it keeps
    between chunks in this process (a warm engine's table), called by :func:`release`;
    ``interrupt(on)`` stops (True) the item running in this process from another thread, the
    item then raising :class:`Interrupted`, or lets the next items run (False); ``group(params,
    item)`` names the items that share state (a warm table's tree; None: no state shared): a
    local session keeps a group's items on the process that ran them (a hint: the results are
    the same; see :meth:`_PoolSession._take`)."""

    def register(function: TaskFunction) -> TaskFunction:
        if _REGISTRY.get(kind, function) is not function:
            raise ValueError(f"task kind {kind!r} is registered twice")
        _REGISTRY[kind] = function
        if release is not None:
            _RELEASE[kind] = release
        if interrupt is not None:
            _INTERRUPT[kind] = interrupt
        if group is not None:
            _GROUP[kind] = group
        return function

    return register


def group_of(work: Task, item: Json) -> str | None:
    """The group of ``work``'s ``item`` as a JSON string (see :func:`task`), or None: a kind
    without groups, or an item that shares no state."""
    group = _GROUP.get(work.kind)
    found = None if group is None else group(work.params, item)
    return None if found is None else json.dumps(found)


def interrupt(kind: str, on: bool = True) -> bool:
    """Stop the item of ``kind`` running in this process (``on``), or clear the stop before
    the next one; False when the kind cannot be stopped mid-item."""
    hook = _INTERRUPT.get(kind)
    if hook is None:
        return False
    hook(on)
    return True


def release() -> None:
    """Drop every task's state kept in this process (a runner with nothing to do: a long-lived
    worker holds no book table between builds)."""
    for hook in _RELEASE.values():
        hook()


def kinds() -> list[str]:
    """The registered kinds (those of the modules imported so far)."""
    return sorted(_REGISTRY)


def run(work: Task, items: Sequence[Json]) -> Iterator[Json]:
    """The results of ``work`` over ``items``, one per item, in order, in this process."""
    function = _REGISTRY.get(work.kind)
    if function is None:
        raise KeyError(f"no task kind {work.kind!r} (known: {', '.join(kinds()) or 'none'})")
    return function(work.params, items)


def chunks(count: int, size: int) -> list[range]:
    """The index ranges of ``count`` items cut into chunks of ``size``."""
    return [range(i, min(i + size, count)) for i in range(0, count, size)]


class Session(Protocol):
    """Items of one task submitted one at a time (see the module docstring)."""

    @property
    def capacity(self) -> int:
        """How many items run at once (the workers; a remote session's may change)."""
        ...

    def submit(self, index: int, item: Json) -> None:
        """Run ``item`` (known by ``index``) once a worker is free."""
        ...

    def cancel(self, index: int) -> None:
        """Stop the item ``index``: dropped if waiting, interrupted if running and its kind
        can be (else it runs to its end, and its result comes all the same)."""
        ...

    def wait(self, timeout: float) -> list[tuple[int, Json]]:
        """The results come since the last call, ``(index, result)``, waiting up to
        ``timeout`` seconds for the first (an empty list: none yet)."""
        ...

    def running(self) -> int:
        """How many items are submitted and neither answered nor dropped."""
        ...


class Executor(Protocol):
    """Runs a task over items somewhere (see the module docstring)."""

    def session(self, work: Task) -> AbstractContextManager[Session]:
        """A session of ``work`` (its processes or its jobs end with it)."""
        ...

    def map(
        self, work: Task, items: Sequence[Json], chunk: int
    ) -> Generator[list[tuple[int, Json]], None, None]:
        """``work`` over ``items`` in chunks of ``chunk`` (neighbours share a process, and so
        a warm engine): batches of ``(index, result)`` as they come, in any order (an empty
        one while waiting, so the caller can keep a deadline). Closing the iterator stops the
        work not done yet."""
        ...


def _run_chunk(payload: tuple[Task, str, int, list[Json]]) -> list[tuple[int, Json]]:
    work, module, start, items = payload
    import_module(module)  # a spawned process registers the kind by importing its module
    return list(enumerate(run(work, items), start))


class _InlineSession:
    """A session in this process: one item at a time, run as :meth:`wait` is called."""

    capacity = 1

    def __init__(self, work: Task) -> None:
        self.work = work
        self.todo: deque[tuple[int, Json]] = deque()

    def submit(self, index: int, item: Json) -> None:
        self.todo.append((index, item))

    def cancel(self, index: int) -> None:
        self.todo = deque(x for x in self.todo if x[0] != index)

    def wait(self, timeout: float) -> list[tuple[int, Json]]:
        if not self.todo:
            return []
        index, item = self.todo.popleft()
        return [(index, next(iter(run(self.work, [item]))))]

    def running(self) -> int:
        return len(self.todo)


def _child(commands: Connection, results: Connection, work: Task, module: str) -> None:
    """A session's process: runs the items sent on ``commands`` one at a time, answering each
    on ``results``; a thread reads the commands meanwhile, so a cancel interrupts the item it
    names while it runs (and no other). Ctrl-C reaches the whole process group: the parent
    alone answers it (it ends the session, and the session its processes), so that the
    child's search is not left behind with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import_module(module)
    todo: queue.SimpleQueue[tuple[int, Json] | None] = queue.SimpleQueue()
    lock = threading.Lock()
    current: list[int | None] = [None]
    cancelled: set[int] = set()  # before they started

    def listen() -> None:
        while True:
            try:
                message = commands.recv()
            except (EOFError, OSError):
                message = None
            if message is None:
                todo.put(None)
                return
            what, index, item = message
            if what == "cancel":
                with lock:
                    if current[0] == index:
                        interrupt(work.kind, True)
                    else:
                        cancelled.add(index)
            else:
                todo.put((index, item))

    threading.Thread(target=listen, daemon=True).start()
    while (next_item := todo.get()) is not None:
        index, item = next_item
        with lock:
            current[0] = index
            interrupt(work.kind, False)
            skip = index in cancelled
        try:
            if skip:
                raise Interrupted
            reply: tuple[str, int, Json] = ("done", index, next(iter(run(work, [item]))))
        except Interrupted:
            reply = ("interrupted", index, None)
        except Exception as error:  # the caller's to raise
            reply = ("failed", index, f"{type(error).__name__}: {error}")
        with lock:
            current[0] = None
        results.send(reply)


@dataclass
class _Worker:
    """A session's process and what it runs (None: idle)."""

    process: Any
    commands: Connection
    results: Connection
    index: int | None = None
    item: Json = None
    cancelled: bool = False
    group: str | None = None  # the group of the item it runs (see :func:`task`), as JSON
    started: float = 0.0  # when it took that item (time.monotonic)


STEAL_BELOW_S = 5.0
"""A group's items whose process has run them this long stay with it while it is busy: its
table holds their tree, which another process would search again from nothing."""
ATTEMPTS = 3
"""A local session's item whose process dies this many times (not killed from outside once,
but the item killing it) fails the session."""


class _PoolSession:
    """A session on ``workers`` spawned processes that live as long as it (see
    :func:`_child`). A process that dies (killed) costs the item in hand: a new one takes
    its place and runs the item again."""

    def __init__(self, work: Task, workers: int) -> None:
        function = _REGISTRY.get(work.kind)
        self.module = function.__module__ if function is not None else __name__
        self.work = work
        self.capacity = workers
        self.todo: deque[tuple[int, Json]] = deque()
        self.deaths: dict[int, int] = {}
        self.home: dict[str, int] = {}  # group -> the process (its place) that runs its items
        self.weight: dict[str, float] = {}  # group -> seconds its home has run its items
        self.workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> _Worker:
        # spawn, not fork: a caller with threads (a server, a test run) may hold a lock
        # (SQLite, logging) as it forks, and the child would wait on it forever. The
        # databases are mapped files: every process shares their pages all the same.
        context = get_context("spawn")
        commands, child_commands = context.Pipe()
        child_results, results = context.Pipe()
        process = context.Process(
            target=_child, args=(child_commands, child_results, self.work, self.module)
        )
        process.daemon = True
        process.start()
        child_commands.close()
        child_results.close()
        return _Worker(process, commands, results)

    def submit(self, index: int, item: Json) -> None:
        self.todo.append((index, item))
        self._dispatch()

    def _take(self, n: int) -> tuple[int, Json] | None:
        """The next item for the idle process ``n``: the first of a group it runs (its home),
        else of no group or a new one, else of a light group (run for under STEAL_BELOW_S)
        whose home is busy, which moves here; None (it waits) when only the groups of idle
        processes, or heavy ones of busy processes, are left (see :func:`task`)."""
        keys = [group_of(self.work, item) for _, item in self.todo]
        home, weight = self.home, self.weight

        def light(k: str) -> bool:
            busy = self.workers[home[k]].index is not None
            return busy and weight.get(k, 0.0) < STEAL_BELOW_S

        pick = next((i for i, k in enumerate(keys) if k is not None and home.get(k) == n), None)
        if pick is None:
            pick = next((i for i, k in enumerate(keys) if k is None or k not in home), None)
        if pick is None:
            pick = next((i for i, k in enumerate(keys) if k is not None and light(k)), None)
        if pick is None:
            return None
        key = keys[pick]
        if key is not None and home.get(key) != n:
            home[key], weight[key] = n, 0.0
        taken = self.todo[pick]
        del self.todo[pick]
        self.workers[n].group = key
        self.workers[n].started = time.monotonic()
        return taken

    def _dispatch(self) -> None:
        for n, worker in enumerate(self.workers):
            if worker.index is None and self.todo:
                taken = self._take(n)
                if taken is None:
                    continue
                worker.index, worker.item = taken
                worker.cancelled = False
                try:
                    worker.commands.send(("run", worker.index, worker.item))
                except OSError:  # it died idle: its successor takes the item
                    self._replace(n)

    def _replace(self, n: int) -> None:
        """The process ``n`` died: a new one in its place, its item first in line again
        (unless cancelled); an item that kills :data:`ATTEMPTS` processes is an error."""
        worker = self.workers[n]
        if worker.index is not None and not worker.cancelled:
            tries = self.deaths.get(worker.index, 0) + 1
            if tries >= ATTEMPTS:
                raise RuntimeError(
                    f"{self.work.kind} item {worker.index}: its process died {tries} times"
                )
            self.deaths[worker.index] = tries
            self.todo.appendleft((worker.index, worker.item))
        worker.results.close()
        worker.commands.close()
        worker.process.join(1)
        for key in [k for k, m in self.home.items() if m == n]:  # its table is gone
            del self.home[key]
        self.workers[n] = self._spawn()

    def cancel(self, index: int) -> None:
        self.todo = deque(x for x in self.todo if x[0] != index)
        for worker in self.workers:
            if worker.index == index and not worker.cancelled:
                worker.cancelled = True
                with suppress(OSError):  # died: wait() finds it out
                    worker.commands.send(("cancel", index, None))

    def running(self) -> int:
        return len(self.todo) + sum(not w.cancelled for w in self.workers if w.index is not None)

    def wait(self, timeout: float) -> list[tuple[int, Json]]:
        self._dispatch()
        busy = [w for w in self.workers if w.index is not None]
        if not busy:
            return []
        ready = set(wait([w.results for w in busy] + [w.process.sentinel for w in busy], timeout))
        done: list[tuple[int, Json]] = []
        for n, worker in enumerate(self.workers):
            if worker.index is None or not (
                worker.results in ready or worker.process.sentinel in ready
            ):
                continue
            try:
                what, index, result = worker.results.recv()
            except (EOFError, OSError):  # died in the middle of its item
                self._replace(n)
                continue
            item, cancelled = worker.item, worker.cancelled
            worker.index = worker.item = None
            if worker.group is not None and self.home.get(worker.group) == n:
                elapsed = time.monotonic() - worker.started
                self.weight[worker.group] = self.weight.get(worker.group, 0.0) + elapsed
            if what == "done":
                done.append((index, result))
            elif what == "failed":
                raise RuntimeError(f"{self.work.kind} item {index} failed: {result}")
            elif not cancelled:  # pragma: no cover - only a cancel interrupts an item
                self.todo.appendleft((index, item))
        self._dispatch()
        return done

    def close(self) -> None:
        for worker in self.workers:
            with suppress(OSError):
                worker.commands.send(None)
        for worker in self.workers:
            worker.process.join(2)
            if worker.process.is_alive():
                worker.process.terminate()  # an item that cannot be interrupted
                worker.process.join(5)
            worker.commands.close()
            worker.results.close()


@dataclass(frozen=True)
class LocalExecutor:
    """This process (``workers`` <= 1), or a pool of ``workers`` spawned processes, each
    keeping its state (a warm engine) from one chunk to the next (with :meth:`session`: for
    the session's whole life)."""

    workers: int = 1

    @contextmanager
    def _session(self, work: Task) -> Iterator[Session]:
        if self.workers <= 1:
            yield _InlineSession(work)
            return
        pool = _PoolSession(work, self.workers)
        try:
            yield pool
        finally:
            pool.close()

    def session(self, work: Task) -> AbstractContextManager[Session]:
        return self._session(work)

    def map(
        self, work: Task, items: Sequence[Json], chunk: int
    ) -> Generator[list[tuple[int, Json]], None, None]:
        function = _REGISTRY.get(work.kind)
        module = function.__module__ if function is not None else __name__
        payloads = [
            (work, module, p.start, list(items[p.start : p.stop]))
            for p in chunks(len(items), chunk)
        ]
        if self.workers <= 1:
            yield from map(_run_chunk, payloads)
            return
        # spawn, not fork: a caller with threads (a server, a test run) may hold a lock (SQLite,
        # logging) as it forks, and the child would wait on it forever. The databases are
        # mapped files: every process shares their pages all the same.
        with get_context("spawn").Pool(self.workers) as pool:  # terminated on close
            yield from pool.imap_unordered(_run_chunk, payloads)


def remote_executor(name: str, url: str) -> Executor:
    """The executor of the ``kalah.executors`` entry point ``name`` for ``url`` (the service's
    ``redis``); an ImportError says what to install when the service is not installed."""
    for entry in metadata.entry_points(group=EXECUTORS_GROUP):
        if entry.name == name:
            factory: Callable[[str], Executor] = entry.load()
            return factory(url)
    raise ImportError(
        f"no {name!r} executor: install the service, pip install 'kalah-core[server]'"
    )


class _ClockSession:
    """A session on ``workers`` workers of a virtual clock (see :class:`ClockExecutor`)."""

    def __init__(
        self, work: Task, workers: int, ticks: Callable[[Json], int], known: dict[str, Json]
    ) -> None:
        self.work = work
        self.capacity = workers
        self.ticks = ticks
        self.known = known
        self.now = 0
        self.todo: deque[tuple[int, Json]] = deque()
        self.ends: list[tuple[int, int, Json]] = []  # (tick, index, result), running items
        self.spent = 0  # ticks the workers worked, cancelled items' part included

    def _result(self, item: Json) -> Json:
        key = repr(item)
        if key not in self.known:
            self.known[key] = next(iter(run(self.work, [item])))
        return self.known[key]

    def submit(self, index: int, item: Json) -> None:
        self.todo.append((index, item))

    def cancel(self, index: int) -> None:
        self.todo = deque(x for x in self.todo if x[0] != index)
        for n, (end, held, result) in enumerate(self.ends):
            if held == index:
                self.spent += self.ticks(result) - (end - self.now)
                self.ends.pop(n)
                heapq.heapify(self.ends)
                return

    def running(self) -> int:
        return len(self.todo) + len(self.ends)

    def wait(self, timeout: float) -> list[tuple[int, Json]]:
        while self.todo and len(self.ends) < self.capacity:
            index, item = self.todo.popleft()
            result = self._result(item)
            heapq.heappush(self.ends, (self.now + self.ticks(result), index, result))
        if not self.ends:
            return []
        self.now = self.ends[0][0]
        done = []
        while self.ends and self.ends[0][0] == self.now:
            _, index, result = heapq.heappop(self.ends)
            self.spent += self.ticks(result)
            done.append((index, result))
        return done


@dataclass
class ClockExecutor:
    """``workers`` virtual workers of equal speed, to measure a schedule free of the machine's
    load: each item is run for real in this process (once: its results are kept in ``known``,
    which runs may share, an item's result being a pure function of it), and costs
    ``ticks(result)`` ticks of a clock (a proof's test: its nodes). An item submitted to a free
    worker at tick t answers at t + its ticks; a cancelled one frees its worker at once. The
    last session's clock (``last.now``) is then the schedule's makespan in ticks."""

    workers: int
    ticks: Callable[[Json], int]
    known: dict[str, Json] = field(default_factory=dict)
    last: _ClockSession | None = None

    @contextmanager
    def _session(self, work: Task) -> Iterator[Session]:
        self.last = _ClockSession(work, self.workers, self.ticks, self.known)
        yield self.last

    def session(self, work: Task) -> AbstractContextManager[Session]:
        return self._session(work)
