"""The engine pool of a worker (finding 5 of issue 13): several searches at once, one engine
kept for short searches, a bounded wait, and a 503 at once for a request that would wait
longer than its own budget. Real engines, real threads."""

from __future__ import annotations

import os
import threading

import pytest

from kalah_core.position import Position
from kalah_core.rules import Rules
from kalah_core.solver import Engine
from kalah_service.core.engines import EnginePool, EnginesBusy

RULES = Rules(seeds=6)  # Kalah(6,6): no search proves it in these budgets
START = Position.start(RULES)


def pool(size: int, waiting: int = 2) -> EnginePool:
    return EnginePool(size, waiting=waiting, make=lambda _lock: Engine(tt_mb=4), short_ms=1000)


def hold(
    engines: EnginePool,
    budget_ms: int,
    started: threading.Event,
    events: list[str] | None = None,
    name: str = "",
) -> threading.Thread:
    """A thread searching with an engine of the pool; ``events`` gets ``name + " began"`` and
    ``name + " ended"`` around its search, in the order they happen (no clock read)."""

    def search() -> None:
        with engines.engine(budget_ms) as engine:
            started.set()
            if events is not None:
                events.append(f"{name} began")
            engine.analyse(START, RULES, time_ms=budget_ms)
            if events is not None:
                events.append(f"{name} ended")

    thread = threading.Thread(target=search)
    thread.start()
    assert started.wait(120)
    return thread


# No assertion on seconds below: what a search overlaps or waits for is checked by the
# order of events. Budgets of seconds leave a busy machine room to start the other thread.


@pytest.mark.system
def test_searches_run_at_once_without_the_gil() -> None:
    engines = pool(3)
    first, second = threading.Event(), threading.Event()
    events: list[str] = []
    threads = [hold(engines, 3000, first, events, "a"), hold(engines, 3000, second, events, "b")]
    for thread in threads:
        thread.join()
    # Side by side: each began before the other ended (a search holding the GIL would have
    # kept the second thread from starting until the first ended).
    assert sorted(events[:2]) == ["a began", "b began"], events
    assert engines.engines == 2


@pytest.mark.system
def test_the_last_engine_is_kept_for_short_searches() -> None:
    engines = pool(2)
    long_one = hold(engines, 5000, threading.Event())
    # A second long one would wait ~5 s, more than its 2 s: refused at once, while the long
    # one still runs (a refusal after waiting would come after it ended).
    with pytest.raises(EnginesBusy) as refused, engines.engine(2000):
        pass
    assert long_one.is_alive(), "refused at once, not after waiting"
    assert 1 <= int(refused.value.headers["Retry-After"]) <= 5  # the long one's rest
    assert refused.value.status == 503 and refused.value.slug == "busy"
    with engines.engine(100) as engine:  # a short one runs beside the long one
        engine.analyse(START, RULES, time_ms=100)
    assert long_one.is_alive(), "beside the long one, not after it"
    long_one.join()


@pytest.mark.system
def test_a_search_waits_for_an_engine_within_its_budget() -> None:
    engines = pool(1, waiting=1)
    events: list[str] = []
    busy = hold(engines, 400, threading.Event(), events, "busy")
    with engines.engine(5000):  # the engine frees in ~0.4 s, within this budget
        events.append("got")
    assert events == ["busy began", "busy ended", "got"], "it waited for the busy search to end"
    busy.join()
    hold(engines, 3000, threading.Event())
    with pytest.raises(EnginesBusy), engines.engine(100):  # less than the ~3 s wait
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
