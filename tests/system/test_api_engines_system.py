"""The system tests of tests/service/test_api_engines.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import threading

import pytest
from test_api_engines import RULES, START, hold, pool

from kalah_service.core.engines import EnginesBusy


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
