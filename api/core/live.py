"""A live analysis: the answer deepening while its caller watches (``/v1/analysis`` asked for
``text/event-stream`` or ``application/x-ndjson``).

The search runs on an engine of the worker's pool (:mod:`.engines`, counted like any other
search, so streams cannot take the engine kept for short searches), on another thread, while
the request's thread reads :meth:`~kalah_core.solver.Engine.snapshot` every ``POLL_S`` and
sends an event each time it changed: a deepening completed, a bound narrowed. The last event
is the answer itself, the one-shot answer's body, stored in the answer cache as a one-shot
search's is. A position answered already (exactly, or for these limits) is that one event.

No search outlives its caller: when the client goes away (its socket reads end-of-file, or a
write fails and the server closes the response) the engine is interrupted, the stream waits
for it to return (a few ms) and gives the engine back. The caller pays the time the search
ran (:func:`kalah_service.edge.charging.charge_stream`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from contextlib import ExitStack
from queue import SimpleQueue

from kalah_core.answer import snapshot_json
from kalah_core.errors import KalahError
from kalah_core.results import Analysis
from kalah_core.solver import Engine, Snapshot

from ..base import metrics
from ..base.config import Settings
from ..stores.answers import Entry
from .analyser import Analyser, search_with
from .problems import ApiProblem, problem_object
from .reply import Answer, dumps
from .request import AnalysisRequest

MEDIA_TYPES = ("text/event-stream", "application/x-ndjson")
"""What a client accepts to get a live analysis instead of one answer."""

POLL_S = 0.02
"""How often the stream looks at the search (and at its client)."""

STOP_POLL_S = 0.002
"""While stopping: how often the engine is interrupted again until its search returns (an
interrupt that comes before ``analyse`` starts is cleared by it)."""


def stream_settings(settings: Settings) -> Settings:
    """The settings a live analysis's limits are checked against: its own longest budget."""
    return dataclasses.replace(settings, max_time_ms=settings.stream_max_time_ms)


def final_event(answer: Answer) -> bytes:
    """The last event: ``{"final": true, "answer": <the one-shot answer's body>}``."""
    return b'{"final":true,"answer":' + answer.body() + b"}"


class Live:
    """One live analysis; :meth:`start` in the request, :meth:`events` in the response,
    :meth:`close` when the response closes (however it ends)."""

    def __init__(
        self,
        analyser: Analyser,
        request: AnalysisRequest,
        *,
        alive: Callable[[], bool],
        heartbeat_s: float,
    ) -> None:
        self.analyser = analyser
        self.request = request
        self.alive = alive
        self.heartbeat_s = heartbeat_s
        self._answer: Answer | None = None
        self._engine: Engine | None = None
        self._search: Future[Analysis] | None = None
        self._started = 0.0
        self._held = ExitStack()
        self._settle: Callable[[float], None] = lambda spent_ms: None
        self._closing = threading.Lock()
        self._closed = False
        self._deepened: SimpleQueue[Snapshot] = SimpleQueue()
        """Every deepening's snapshot, from the search's thread (polling would miss the
        first ones: a dozen in a few milliseconds)."""

    def start(self, bill: Callable[[int], Callable[[float], None]]) -> None:
        """The answer from the cache, or the search started: ``bill(budget_ms)`` reserves its
        cost (a 429 problem when the caller cannot pay) and returns how to settle it, and an
        engine is taken (a 503 problem when none is free in time), before any event is sent."""
        analyser, request = self.analyser, self.request
        keys = analyser.keys(request)
        entry, level = analyser.cache.lookup(keys)
        if entry is not None:
            metrics.CACHE.labels(level, "hit").inc()
            metrics.ANSWERS.labels("exact" if entry.exact else "heuristic", "true").inc()
            self._answer = Answer(entry.body, entry.exact, cached=True)
            return
        metrics.CACHE.labels(analyser.cache.backend, "miss").inc()
        budget_ms = request.limits.time_ms
        self._settle = bill(budget_ms)
        pool = analyser.engines()
        engine = self._engine = self._held.enter_context(pool.engine(budget_ms))

        def run() -> Analysis:
            engine.on_deepened = self._deepened.put
            try:
                return search_with(engine, request)
            finally:
                engine.on_deepened = None

        self._started = time.perf_counter()
        try:
            self._search = pool.background(budget_ms, run)
        except BaseException:
            self._held.close()  # the engine goes back: no search started
            raise

    def events(self) -> Iterator[bytes | None]:
        """Each event's JSON, None for a heartbeat; the answer last."""
        try:
            if self._answer is not None:
                yield final_event(self._answer)
                return
            yield from self._watch()
        finally:
            self.close()

    def _watch(self) -> Iterator[bytes | None]:
        search, engine = self._search, self._engine
        assert search is not None and engine is not None
        seen: object = None
        quiet_since = time.monotonic()

        def shown(snapshot: Snapshot | None) -> bytes | None:
            """The event of ``snapshot``, None when it shows nothing new."""
            nonlocal seen, quiet_since
            if snapshot is None:
                return None
            moves = tuple((m.move, m.value, m.lower, m.upper) for m in snapshot.moves)
            key = (snapshot.depth, snapshot.value, snapshot.lower, snapshot.upper, moves)
            if key == seen:
                return None
            seen, quiet_since = key, time.monotonic()
            elapsed = (time.perf_counter() - self._started) * 1000.0
            return dumps(snapshot_json(snapshot, elapsed))

        while True:
            running = not wait_for([search], POLL_S).done
            if running and not self.alive():
                return  # the client went away: close() stops the search
            sent = False
            while not self._deepened.empty():
                event = shown(self._deepened.get())
                if event is not None:
                    sent = True
                    yield event
            if not running:
                break
            if not sent:
                event = shown(engine.snapshot())
                if event is not None:
                    yield event
                elif time.monotonic() - quiet_since >= self.heartbeat_s:
                    quiet_since = time.monotonic()
                    yield None
        try:
            analysis = search.result()
        except (ApiProblem, KalahError) as error:
            yield b'{"final":true,"problem":' + dumps(problem_object(error)) + b"}"
            return
        finally:
            self._release()
        yield final_event(self._finish(analysis))

    def _finish(self, analysis: Analysis) -> Answer:
        """The answer of a search that ran its course: charged, counted and stored as a
        one-shot search's (:meth:`Analyser.analyse`)."""
        request = self.request
        spent = min(analysis.time_ms, request.limits.time_ms)  # settled by _release
        kind = "exact" if analysis.exact else "heuristic"
        metrics.SEARCH_SECONDS.labels(kind).observe(analysis.time_ms / 1000.0)
        metrics.SEARCH_NODES.inc(analysis.nodes)
        metrics.ANSWERS.labels(kind, "false").inc()
        answer = Answer.of(request, analysis, spent)
        self.analyser.cache.put(
            self.analyser.keys(request), Entry(answer.content, answer.exact, analysis.depth)
        )
        return answer

    def _release(self) -> None:
        """Stop the search if it still runs (within ms), give the engine back and settle the
        bill with the time it ran (a search cut short is charged what it ran)."""
        search, engine = self._search, self._engine
        if search is not None and engine is not None:
            while not search.done():
                engine.interrupt()
                wait_for([search], STOP_POLL_S)
            try:
                spent = min(search.result().time_ms, self.request.limits.time_ms)
            except BaseException:  # the search failed: charged the time it ran
                spent = (time.perf_counter() - self._started) * 1000.0
            self._settle(spent)  # once: a search that ran its course was settled already
        self._held.close()

    def close(self) -> None:
        """The response is closed (ended, or its client went away): no search outlives it."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
        self._release()
