"""A process's engines: a small pool, so that several searches run at once (the search runs
without the GIL) and a cheap request is never held behind others' long searches.

- At most ``KALAH_ENGINES`` engines per process, each with its own transposition table
  (``KALAH_TT_MB``) and the endgame databases, created when first needed (a batch worker
  or the command line, one search at a time, makes one).
- The last engine is kept for short searches (a budget of at most ``KALAH_DEFAULT_TIME_MS``):
  long ones use at most ``KALAH_ENGINES - 1`` at once, so a short search finds an engine as
  soon as a short search ends, however many long ones run.
- The wait for an engine is bounded: a search that would wait longer than its own budget
  (until the earliest end of the searches running, and queued, ahead of it) is refused at
  once with :class:`EnginesBusy` (a 503 problem with ``Retry-After``), and few wait
  (searching and waiting threads are at most ``KALAH_THREADS - 1``), so a worker's threads
  never all search or wait: its health checks and cached answers keep being served.
- Long searches run at a lower CPU priority than short ones (:class:`LowPriority`: their own
  threads at ``KALAH_LONG_NICE``, 10 by default), so on busy cores the kernel gives a short
  search and the health checks the CPU first while the long ones take what is left.
- Making an engine takes 0.2-0.4 s (its table's pages are touched up front), seconds on busy
  cores: two are made when a gunicorn worker starts (:meth:`EnginePool.prepare`); short
  searches make no more and wait for a busy one instead; a long search makes a new one
  rather than take the last free one, which short searches use.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from kalah_core.solver import Engine

from ..base import metrics
from .problems import ApiProblem

log = logging.getLogger("kalah_service.engines")

T = TypeVar("T")

EAGER = 2
"""Engines made before they are needed (a gunicorn worker at start), and the most a short
search makes: a long search makes the others."""

WAIT_GRACE_S = 0.5
"""A search decided to wait gives up after twice its expected wait (or budget) and this."""


class EnginesBusy(ApiProblem):
    """No engine within the request's own budget: try again after ``retry_after_s``."""

    def __init__(self, retry_after_s: float, budget_ms: int) -> None:
        retry = max(1, math.ceil(retry_after_s))
        super().__init__(
            "busy",
            f"every engine of this worker is searching: the wait (about {retry} s) would be "
            f"longer than this request's budget of {budget_ms} ms; see Retry-After",
            field=None,
            headers={"Retry-After": str(retry)},
        )


class LowPriority:
    """Threads whose CPU priority is lowered by ``nice`` (Linux schedules threads, and each has
    its own nice value), on which long searches run while their request thread waits: a
    thread cannot raise its priority back without privileges, so these threads stay low and
    only run long searches (an OpenMP search's helper threads inherit the value)."""

    def __init__(self, threads: int, nice: int) -> None:
        self.nice = nice
        self._threads = ThreadPoolExecutor(
            max(1, threads), thread_name_prefix="long-search", initializer=self._lower
        )

    def _lower(self) -> None:
        try:
            me = threading.get_native_id()
            lowered = min(19, os.getpriority(os.PRIO_PROCESS, me) + self.nice)
            os.setpriority(os.PRIO_PROCESS, me, lowered)
        except (AttributeError, OSError) as error:  # not Linux: the same priority as the rest
            log.warning("long searches run at normal priority: %s", error)

    def run(self, work: Callable[[], T]) -> T:
        return self._threads.submit(work).result()

    def submit(self, work: Callable[[], T]) -> Future[T]:
        return self._threads.submit(work)


@dataclass(eq=False, slots=True)
class EngineSlot:
    """One engine (made on first use) and the lock that guards it (attaching a database
    takes it too)."""

    engine: Engine | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    ends: float = 0.0
    """Monotonic time by which its current search should end."""
    long: bool = False


class EnginePool:
    """The engines of one process; see the module docstring."""

    def __init__(
        self,
        size: int,
        *,
        waiting: int,
        make: Callable[[threading.Lock], Engine],
        short_ms: int,
        long_nice: int = 0,
    ) -> None:
        self.size = size
        self.max_waiting = waiting
        self.make = make
        """Makes an engine, its databases attached under the given lock (its slot's)."""
        self.short_ms = short_ms
        self._free: list[EngineSlot] = []
        self._busy: list[EngineSlot] = []
        self._created = 0
        self._waiting = 0
        self._changed = threading.Condition()
        self._low = LowPriority(self._long_cap(), long_nice) if long_nice > 0 else None

    def _long_cap(self) -> int:
        return max(1, self.size - 1)

    def _can_run(self, long: bool) -> bool:
        if long:
            if sum(s.long for s in self._busy) >= self._long_cap():
                return False
            return bool(self._free) or self._created < self.size
        # A short search makes no engine beyond the first EAGER (making one costs more than
        # a short search waits for a busy one), but a long one never takes the last free.
        return bool(self._free) or self._created < min(EAGER, self.size)

    def _expected_wait(self, long: bool, now: float) -> float:
        """When an engine should free for a new search, after those already waiting."""
        ends = sorted(s.ends for s in self._busy if s.long or not long)
        if not ends:
            return 0.0
        return max(0.0, ends[min(self._waiting, len(ends) - 1)] - now)

    @contextmanager
    def engine(self, budget_ms: int) -> Iterator[Engine]:
        """An engine for one search of ``budget_ms``; its lock is held while it is used."""
        long = budget_ms > self.short_ms and self.size > 1
        budget_s = budget_ms / 1000
        with self._changed:
            if not self._can_run(long):
                now = time.monotonic()
                wait = self._expected_wait(long, now)
                if wait > budget_s or self._waiting >= self.max_waiting:
                    raise EnginesBusy(wait, budget_ms)
                self._waiting += 1
                try:
                    # Searches end a few ms after their budget and their answers are shaped
                    # after that (longer on busy cores): a wait decided on is not cut short.
                    give_up = now + 2 * max(wait, budget_s) + WAIT_GRACE_S
                    while not self._can_run(long):
                        left = give_up - time.monotonic()
                        if left <= 0:
                            raise EnginesBusy(
                                self._expected_wait(long, time.monotonic()), budget_ms
                            )
                        self._changed.wait(left)
                finally:
                    self._waiting -= 1
            # A long search makes a new engine rather than take the last one made: short
            # searches find it ready (making one takes 0.2-0.4 s, seconds on busy cores).
            keep_last = long and len(self._free) <= 1 and self._created < self.size
            if self._free and not keep_last:
                slot = self._free.pop()
            else:  # a new engine, counted now and made below (no one waits on the lock)
                slot = EngineSlot()
                self._created += 1
            slot.ends = time.monotonic() + budget_s  # a search ends within ms of its budget
            slot.long = long
            self._busy.append(slot)
            metrics.ENGINES_BUSY.inc()
        try:
            if slot.engine is None:
                self._equip(slot)
            assert slot.engine is not None
            with slot.lock:
                yield slot.engine
        finally:
            with self._changed:
                self._busy.remove(slot)
                self._free.append(slot)
                metrics.ENGINES_BUSY.dec()
                self._changed.notify_all()

    def search(self, budget_ms: int, work: Callable[[Engine], T]) -> T:
        """Run ``work`` with an engine for a search of ``budget_ms``: a long one on a
        low-priority thread (:class:`LowPriority`), a short one on the caller's."""
        long = budget_ms > self.short_ms and self.size > 1
        with self.engine(budget_ms) as engine:
            if long and self._low is not None:
                return self._low.run(lambda: work(engine))
            return work(engine)

    def background(self, budget_ms: int, work: Callable[[], T]) -> Future[T]:
        """Start ``work``, a search of ``budget_ms`` on an engine the caller holds
        (:meth:`engine`), on another thread (a live stream's: its request thread writes the
        events meanwhile): a long one on a low-priority thread, as :meth:`search` runs it."""
        long = budget_ms > self.short_ms and self.size > 1
        if long and self._low is not None:
            return self._low.submit(work)
        future: Future[T] = Future()

        def run() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(work())
                except BaseException as error:  # handed to the caller, as an executor does
                    future.set_exception(error)

        threading.Thread(target=run, name="live-search", daemon=True).start()
        return future

    def _equip(self, slot: EngineSlot) -> None:
        slot.engine = self.make(slot.lock)

    def prepare(self, count: int = EAGER) -> threading.Thread:
        """Make ``count`` engines now, in a background thread (a gunicorn worker at start): a
        table takes 0.2-0.4 s to allocate, several times that on busy cores, which a cheap
        request should not wait for; more are made when searches need them."""

        def fill() -> None:
            while True:
                with self._changed:
                    if self._created >= min(count, self.size):
                        return
                slot = EngineSlot()
                self._equip(slot)  # meanwhile requests make their own: none waits for this
                with self._changed:
                    if self._created >= self.size:
                        return
                    self._created += 1
                    self._free.append(slot)
                    self._changed.notify_all()

        thread = threading.Thread(target=fill, name="engines", daemon=True)
        thread.start()
        return thread

    @property
    def engines(self) -> int:
        """How many engines exist."""
        return self._created

    @property
    def busy(self) -> int:
        """How many engines are searching (or held for a search) now."""
        with self._changed:
            return len(self._busy)

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no engine is busy (at most ``timeout_s``); whether none is."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._busy, timeout_s)
