"""The engine pool of a worker (finding 5 of issue 13): several searches at once, one engine
kept for short searches, a bounded wait, and a 503 at once for a request that would wait
longer than its own budget. Real engines, real threads."""

from __future__ import annotations

import os
import threading

from kalah_core.position import Position
from kalah_core.rules import Rules
from kalah_core.solver import Engine
from kalah_service.core.engines import EnginePool

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
