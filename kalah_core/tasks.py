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
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import import_module, metadata
from multiprocessing import get_context
from typing import Any, Protocol, TypeAlias

Json: TypeAlias = Any
"""A JSON value (what json.dumps takes and json.loads gives)."""

TaskFunction = Callable[[dict[str, Json], Sequence[Json]], Iterator[Json]]
"""A task's function: (parameters, items) -> one result per item, in order."""

EXECUTORS_GROUP = "kalah.executors"
"""Entry points naming a factory ``(url: str) -> Executor`` (the service's: ``redis``)."""

_REGISTRY: dict[str, TaskFunction] = {}
_RELEASE: dict[str, Callable[[], None]] = {}


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
    kind: str, release: Callable[[], None] | None = None
) -> Callable[[TaskFunction], TaskFunction]:
    """Register a function under ``kind`` (a decorator); ``release`` drops the state it keeps
    between chunks in this process (a warm engine's table), called by :func:`release`."""

    def register(function: TaskFunction) -> TaskFunction:
        if _REGISTRY.get(kind, function) is not function:
            raise ValueError(f"task kind {kind!r} is registered twice")
        _REGISTRY[kind] = function
        if release is not None:
            _RELEASE[kind] = release
        return function

    return register


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


class Executor(Protocol):
    """Runs a task over items somewhere (see the module docstring)."""

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


@dataclass(frozen=True)
class LocalExecutor:
    """This process (``workers`` <= 1), or a pool of ``workers`` spawned processes, each
    keeping its state (a warm engine) from one chunk to the next."""

    workers: int = 1

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
