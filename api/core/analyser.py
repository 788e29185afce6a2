"""The analyser: one per app, holding the settings, the answer cache and this process's
engine. :meth:`Analyser.analyse` is the one analysis code path of the HTTP routes, the batch
runners, the game review and the command line: look the request up in the cache, search on a
miss, shape and store the answer. :meth:`Analyser.analyse_item` is the step every batch
runner takes per item: the answer's body, or the problem object of an item that cannot be
analysed.

What a search costs is not decided here: the analyser tells its :class:`Meter` (the HTTP
app's is the caller's bill, :mod:`kalah_service.ratelimit`) before a search starts and after it ran.

A small pool of :class:`~kalah_core.solver.Engine` per process (:mod:`.engines`:
``KALAH_ENGINES``, each with a ``KALAH_TT_MB`` table), created on first use so that each
gunicorn worker gets its own after the fork: several searches run at once, without the GIL.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

from kalah_core import book, deepbook, reference
from kalah_core.errors import KalahError
from kalah_core.position import Position
from kalah_core.results import Analysis
from kalah_core.rules import Rules
from kalah_core.solver import ENGINE_VERSION, Engine

from ..base import metrics
from ..base.config import MAX_PV_SOWINGS, Settings
from ..stores.answers import AnswerStore, Entry, Keys
from . import endgames as egdb
from .engines import EnginePool
from .problems import ApiProblem, problem_object
from .reply import Answer, dumps
from .request import AnalysisRequest

LOCK_MARGIN_S = 2.0
"""Beyond its search budget, how long other requests wait for the worker computing a key."""


class Meter(Protocol):
    """Who is told about the searches (the HTTP app: the current caller's bill)."""

    def before_search(self, budget_ms: int) -> None:
        """A search of at most ``budget_ms`` is about to run (may refuse it by raising)."""

    def after_search(self, spent_ms: float) -> None:
        """A search ran ``spent_ms`` milliseconds of engine time (at most its budget)."""

    def prepay(self, budget_ms: int) -> None:
        """Work of many searches with ``budget_ms`` in all starts (a game review)."""


class Analyser:
    """One per app: the settings, the cache and this process's engine."""

    def __init__(
        self, settings: Settings, cache: AnswerStore, *, meter: Meter | None = None
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.meter = meter
        self._pool: tuple[int, EnginePool] | None = None
        self._create_lock = threading.Lock()
        self._self_test: tuple[int, bool, str] | None = None
        self._databases: tuple[int, egdb.DatabaseService] | None = None
        self._suffixes: dict[Rules, tuple[int, str]] = {}
        """Each rules set's part of the answer key that names the books and its database,
        with the databases' generation it was computed at."""

    # -- the engine ------------------------------------------------------------------------

    def engines(self) -> EnginePool:
        """This process's engines, made on first use (after a fork, a new pool)."""
        state = self._pool
        if state is None or state[0] != os.getpid():
            with self._create_lock:
                state = self._pool
                if state is None or state[0] != os.getpid():
                    settings = self.settings
                    engines, waiting = settings.engine_slots()
                    pool = EnginePool(
                        engines,
                        waiting=waiting,
                        make=self._make_engine,
                        short_ms=settings.default_time_ms,
                        long_nice=settings.long_nice,
                    )
                    state = self._pool = (os.getpid(), pool)
        return state[1]

    def databases(self) -> egdb.DatabaseService:
        """This process's endgame databases, opened (and in ``auto`` their background builds
        started) on first use: a gunicorn worker at its start, any other process at its first
        request that needs them (after a fork, the child's own service)."""
        found = self._databases
        if found is None or found[0] != os.getpid():
            service = egdb.service(self.settings.egdb_path, self.settings.egdb_seeds)
            service.start()  # once per process; the service guards itself
            self._suffixes = {}  # the parent's, of its own service's generations
            found = self._databases = (os.getpid(), service)
        return found[1]

    def _make_engine(self, lock: threading.Lock) -> Engine:
        """A new engine with the shipped books and the service's endgame databases (attached
        under ``lock``, which guards its searches)."""
        engine = Engine(
            tt_mb=self.settings.tt_mb,
            book=book.shipped(),
            threads=self.settings.search_threads,
            deep_book=deepbook.shipped(),
        )
        self.databases().attach_to(engine, lock)
        return engine

    def search(self, request: AnalysisRequest) -> Analysis:
        """Search with one of this process's engines (no cache); raises EnginesBusy (a 503)
        when none is free within the request's own budget."""
        limits = request.limits

        def run(engine: Engine) -> tuple[Analysis, float]:
            started = time.perf_counter()
            return search_with(engine, request), started

        analysis, started = self.engines().search(limits.time_ms, run)
        metrics.SEARCH_SECONDS.labels("exact" if analysis.exact else "heuristic").observe(
            time.perf_counter() - started
        )
        metrics.SEARCH_NODES.inc(analysis.nodes)
        return analysis

    def self_test(self) -> tuple[bool, str]:
        """Solve a tiny position and compare with the reference's plain minimax;
        once passed, not run again in this process."""
        if self._self_test is not None and self._self_test[0] == os.getpid():
            return self._self_test[1], self._self_test[2]
        try:
            rules = Rules(houses=2, seeds=2)
            position = Position.start(rules)
            expected = reference.value(position, rules)
            # A small engine of its own: never waits behind a long search of this worker.
            got = Engine(tt_mb=1).analyse(position, rules, time_ms=1000)
            ok = got.exact and got.value == expected
            result = (
                ok,
                f"engine {ENGINE_VERSION} solved h2s2: {got.value} (expected {expected})",
            )
        except Exception as error:  # the health check reports, never raises
            result = (False, f"engine self-test failed: {type(error).__name__}: {error}")
        if result[0]:  # a failure is retried by the next health check
            self._self_test = (os.getpid(), *result)
        return result

    # -- answers ---------------------------------------------------------------------------

    def analyse(self, request: AnalysisRequest) -> Answer:
        """The answer to ``request``: from the cache, or searched once (concurrent requests
        for one key wait for the first)."""
        fresh: list[Answer] = []

        def compute() -> Entry:
            if self.meter is not None:
                self.meter.before_search(request.limits.time_ms)
            analysis = self.search(request)
            # The engine's own time (no lock wait, no set-up), charged at most its budget.
            spent = min(analysis.time_ms, request.limits.time_ms)
            if self.meter is not None:
                self.meter.after_search(spent)
            answer = Answer.of(request, analysis, spent)
            fresh.append(answer)
            return Entry(answer.content, answer.exact, analysis.depth)

        wait_s = request.limits.time_ms / 1000 + LOCK_MARGIN_S
        entry, cached = self.cache.compute_once(self.keys(request), compute, wait_s)
        metrics.ANSWERS.labels("exact" if entry.exact else "heuristic", str(cached).lower()).inc()
        if fresh and not cached:
            return fresh[0]
        return Answer(entry.body, entry.exact, cached=True)

    def analyse_item(self, request: AnalysisRequest) -> bytes:
        """One batch item's JSON: its answer's body, or the problem object of why it cannot be
        analysed (every batch runner's step per item: inline, jobs, ``kalah batch``)."""
        try:
            return self.analyse(request).body()
        except (ApiProblem, KalahError) as error:
            return dumps(problem_object(error))

    def keys(self, request: AnalysisRequest) -> Keys:
        """Where the answer to ``request`` is cached: an inexact one also under the book and
        the database this worker has for its rules (a background build that finishes, or a
        new book, gives a fresh search a chance to prove it)."""
        return Keys.of(ENGINE_VERSION, request.key, request.exact_key, self._suffix(request.rules))

    def _suffix(self, rules: Rules) -> str:
        """The books' and ``rules``' database part of the key: computed once per rules set
        and process, again only when a database is attached."""
        databases = self.databases()
        generation = databases.generation  # read first: an attach meanwhile recomputes
        known = self._suffixes.get(rules)
        if known is not None and known[0] == generation:
            return known[1]
        seeds = databases.max_seeds(rules)
        suffix = f"book-{book.shipped_digest()}.deep-{deepbook.shipped_digest()}.egdb{seeds}"
        if len(self._suffixes) > 10000:  # bounded: any rules set can be asked for
            self._suffixes.clear()
        self._suffixes[rules] = (generation, suffix)
        return suffix

    def analyse_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/analysis`` without HTTP: the same parsing, limits, cache and answer."""
        return self.analyse(AnalysisRequest.from_body(self.settings, body)).json()


def search_with(engine: Engine, request: AnalysisRequest) -> Analysis:
    """The one way a request is searched: its position, rules, limits and moves on ``engine``
    (a one-shot answer and a stream's search are the same search)."""
    limits = request.limits
    return engine.analyse(
        request.position,
        request.rules,
        time_ms=limits.time_ms,
        depth=limits.depth,
        nodes=limits.nodes,
        pv_limit=MAX_PV_SOWINGS,
        moves=request.moves,
    )
