"""The engine pool of a worker (finding 5 of issue 13): several searches at once, one engine
kept for short searches, a bounded wait, and a 503 at once for a request that would wait
longer than its own budget. Real engines, real threads."""

from __future__ import annotations

import os
import threading
import time

import pytest

from api.core.engines import EnginePool, EnginesBusy
from kalah_core.position import Position
from kalah_core.rules import Rules
from kalah_core.solver import Engine

RULES = Rules(seeds=6)  # Kalah(6,6): no search proves it in these budgets
START = Position.start(RULES)


def pool(size: int, waiting: int = 2) -> EnginePool:
    return EnginePool(size, waiting=waiting, make=lambda _lock: Engine(tt_mb=4), short_ms=1000)


def hold(engines: EnginePool, budget_ms: int, started: threading.Event) -> threading.Thread:
    def search() -> None:
        with engines.engine(budget_ms) as engine:
            started.set()
            engine.analyse(START, RULES, time_ms=budget_ms)

    thread = threading.Thread(target=search)
    thread.start()
    assert started.wait(5)
    return thread


def test_searches_run_at_once_without_the_gil() -> None:
    engines = pool(3)
    first, second = threading.Event(), threading.Event()
    began = time.perf_counter()
    threads = [hold(engines, 600, first), hold(engines, 600, second)]
    for thread in threads:
        thread.join()
    assert time.perf_counter() - began < 1.1, "two 600 ms searches side by side"
    assert engines.engines == 2


def test_the_last_engine_is_kept_for_short_searches() -> None:
    engines = pool(2)
    long_one = hold(engines, 3000, threading.Event())
    started = time.perf_counter()
    # A second long one would wait ~3 s, more than its 2 s: refused at once.
    with pytest.raises(EnginesBusy) as refused, engines.engine(2000):
        pass
    assert time.perf_counter() - started < 0.1, "refused at once, not after waiting"
    assert int(refused.value.headers["Retry-After"]) in (3, 4)  # the long one ends in ~3 s
    assert refused.value.status == 503 and refused.value.slug == "busy"
    with engines.engine(100) as engine:  # a short one runs beside the long one
        engine.analyse(START, RULES, time_ms=100)
    assert time.perf_counter() - started < 0.5
    long_one.join()


def test_a_search_waits_for_an_engine_within_its_budget() -> None:
    engines = pool(1, waiting=1)
    busy = hold(engines, 400, threading.Event())
    started = time.perf_counter()
    with engines.engine(1000):  # the engine frees in ~0.4 s, within this budget
        waited = time.perf_counter() - started
    assert 0.2 < waited < 0.8
    busy.join()
    hold(engines, 400, threading.Event())
    with pytest.raises(EnginesBusy), engines.engine(100):  # less than the ~400 ms wait
        pass


def test_long_searches_run_at_a_lower_cpu_priority() -> None:
    """A long search runs on a thread of its own at nice + 10; a short one on the caller's."""
    engines = EnginePool(
        3, waiting=2, make=lambda _lock: Engine(tt_mb=4), short_ms=1000, long_nice=10
    )

    def priority(engine: Engine) -> tuple[int, int, int]:
        value = engine.analyse(START, RULES, time_ms=20).value
        me = threading.get_native_id()
        return me, os.getpriority(os.PRIO_PROCESS, me), value

    caller = threading.get_native_id()
    base = os.getpriority(os.PRIO_PROCESS, caller)
    short_thread, short_nice, _ = engines.search(1000, priority)
    long_thread, long_nice, _ = engines.search(1001, priority)
    assert short_thread == caller and short_nice == base
    assert long_thread != caller and long_nice == min(19, base + 10)
    assert os.getpriority(os.PRIO_PROCESS, caller) == base
