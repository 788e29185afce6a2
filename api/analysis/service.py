"""The analysis code path shared by the HTTP routes (and meant for ``kalah analyse``):
normalize the request, look it up in the cache, search on a miss, shape the answer.

The answer body is built once per computation, serialized, and cached as bytes; a cache hit
only prepends ``"cached": true``. One :class:`Engine` per process (its transposition table is
``KALAH_TT_MB``), created on first use so that each gunicorn worker gets its own after the
fork, and used under a lock (a gthread worker answers several requests at a time).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kalah_core import solver
from kalah_core.game import legal_moves, play
from kalah_core.position import Position, parse_position
from kalah_core.rules import Rules

from .. import metrics
from ..cache import AnswerCache, Entry, cache_keys
from ..config import MAX_DEPTH, MAX_PV_SOWINGS, Settings
from ..egdb import attach_databases
from ..errors import ApiProblem, renamed_field

LOCK_MARGIN_S = 2.0
"""Beyond its search budget, how long other requests wait for the worker computing a key."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The effective limits of a search: the client's, defaulted, checked against the server's."""

    time_ms: int
    depth: int | None = None
    nodes: int | None = None

    @property
    def key(self) -> str:
        return (
            f"t{self.time_ms}"
            + (f"d{self.depth}" if self.depth else "")
            + (f"n{self.nodes}" if self.nodes else "")
        )

    def to_json(self) -> dict[str, Any]:
        return {"time_ms": self.time_ms, "depth": self.depth, "nodes": self.nodes}


def effective_limits(
    settings: Settings,
    time_ms: int | None,
    depth: int | None,
    nodes: int | None,
    *,
    prefix: str = "",
) -> Limits:
    """The limits a search runs with; a budget above the server's maximum is a 422 naming the
    field (``limits.time_ms`` in a body, ``time_ms`` in a query) and the maximum."""
    for name, value, maximum in (
        ("time_ms", time_ms, settings.max_time_ms),
        ("depth", depth, MAX_DEPTH),
        ("nodes", nodes, settings.max_nodes),
    ):
        if value is not None and value > maximum:
            raise ApiProblem(
                "limit-exceeded",
                f"{name} {value} is above the server's maximum of {maximum}",
                field=prefix + name,
                max=maximum,
            )
        if value is not None and value < 1:
            raise ApiProblem("invalid-request", f"{name} must be at least 1", field=prefix + name)
    return Limits(time_ms if time_ms is not None else settings.default_time_ms, depth, nodes)


def parse_rules(value: object, *, field: str = "rules") -> Rules:
    """Rules from a preset name or an object of options; errors name ``rules[.<option>]``."""

    def rename(name: str | None) -> str:
        if name in (None, "rules") or (name == "preset" and not isinstance(value, Mapping)):
            return field
        return f"{field}.{name}"

    with renamed_field(rename):
        return Rules.from_json(value)


def parse_query_rules(preset: str | None, overrides: Mapping[str, Any]) -> Rules:
    """Rules from query parameters: ``rules=<preset>`` plus one parameter per overridden option."""

    def rename(name: str | None) -> str:
        return "rules" if name in (None, "rules", "preset") else str(name)

    with renamed_field(rename):
        return Rules.preset(preset or "kalah", **overrides)


def parse_position_field(value: object, rules: Rules, *, field: str = "position") -> Position:
    def rename(name: str | None) -> str:
        if not name or name in ("position", "notation"):
            return field
        return (
            field + name[len("position") :] if name.startswith("position.") else f"{field}.{name}"
        )

    with renamed_field(rename):
        return parse_position(value, rules)


def etag_of(body: bytes) -> str:
    """A strong entity tag: the digest of the exact bytes of the representation."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


@dataclass(frozen=True, slots=True)
class Answer:
    body: bytes
    """The complete JSON answer, ``cached`` flag included."""
    exact: bool
    cached: bool
    search_ms: float = 0.0
    """How long this request searched (0 when the answer came from the cache)."""

    @property
    def etag(self) -> str:
        return etag_of(self.body)

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


class EngineUnavailable(ApiProblem):
    def __init__(self) -> None:
        super().__init__(
            "not-ready", "the solver engine is not available in this build", field=None
        )


def engine_version() -> str:
    return str(getattr(solver, "ENGINE_VERSION", "unavailable"))


class Analyser:
    """One per app: the settings, the cache and this process's engine."""

    def __init__(self, settings: Settings, cache: AnswerCache) -> None:
        self.settings = settings
        self.cache = cache
        # (pid, engine, lock): one engine per process, created on first use after the fork.
        self._engine_state: tuple[int, Any, threading.Lock] | None = None
        self._create_lock = threading.Lock()
        self._self_test: tuple[int, bool, str] | None = None

    # -- the engine ------------------------------------------------------------------------

    def _engine_for_process(self) -> tuple[Any, threading.Lock]:
        state = self._engine_state
        if state is None or state[0] != os.getpid():
            with self._create_lock:
                state = self._engine_state
                if state is None or state[0] != os.getpid():
                    engine_class = getattr(solver, "Engine", None)
                    if engine_class is None:
                        raise EngineUnavailable()
                    engine = engine_class(
                        tt_mb=self.settings.tt_mb, threads=self.settings.search_threads
                    )
                    state = (os.getpid(), engine, threading.Lock())
                    self._engine_state = state
                    attach_databases(engine, state[2], self.settings.egdb_path)
        return state[1], state[2]

    def search(self, position: Position, rules: Rules, limits: Limits) -> solver.Analysis:
        engine, lock = self._engine_for_process()
        started = time.perf_counter()
        with lock:
            analysis: solver.Analysis = engine.analyse(
                position,
                rules,
                time_ms=limits.time_ms,
                depth=limits.depth,
                nodes=limits.nodes,
                pv_limit=MAX_PV_SOWINGS,
            )
        metrics.SEARCH_SECONDS.labels("exact" if analysis.exact else "heuristic").observe(
            time.perf_counter() - started
        )
        metrics.SEARCH_NODES.inc(analysis.nodes)
        return analysis

    def self_test(self) -> tuple[bool, str]:
        """Solve a tiny position and compare with a plain minimax over the move generator;
        once passed, not run again in this process."""
        if self._self_test is not None and self._self_test[0] == os.getpid():
            return self._self_test[1], self._self_test[2]
        try:
            rules = Rules(houses=2, seeds=2)
            position = Position.start(rules)
            expected = _minimax(position, rules)
            # A small engine of its own: never waits behind a long search of this worker.
            engine_class = getattr(solver, "Engine", None)
            if engine_class is None:
                raise EngineUnavailable()
            got = engine_class(tt_mb=1).analyse(position, rules, time_ms=1000)
            ok = got.exact and got.value == expected
            result = (
                ok,
                f"engine {engine_version()} solved h2s2: {got.value} (expected {expected})",
            )
        except ApiProblem as problem:
            result = (False, problem.detail)
        except Exception as error:  # the health check reports, never raises
            result = (False, f"engine self-test failed: {type(error).__name__}: {error}")
        if result[0]:  # a failure is retried by the next health check
            self._self_test = (os.getpid(), *result)
        return result

    # -- answers ---------------------------------------------------------------------------

    def analyse(self, position: Position, rules: Rules, limits: Limits) -> Answer:
        keys = cache_keys(engine_version(), rules.key, position.compact(), limits.key)
        searched: list[float] = []

        def compute() -> Entry:
            analysis = self.search(position, rules, limits)
            searched.append(analysis.time_ms)  # the engine's own time: no lock wait, no set-up
            body = answer_body(position, rules, limits, analysis)
            return Entry(body, analysis.exact, analysis.depth)

        if getattr(solver, "Engine", None) is None:
            raise EngineUnavailable()
        wait_s = limits.time_ms / 1000 + LOCK_MARGIN_S
        entry, cached = self.cache.compute_once(keys, compute, wait_s)
        metrics.ANSWERS.labels("exact" if entry.exact else "heuristic", str(cached).lower()).inc()
        prefix = b'{"cached":true,' if cached else b'{"cached":false,'
        return Answer(prefix + entry.body[1:], entry.exact, cached, sum(searched))


def best_move_of(full: dict[str, Any]) -> dict[str, Any]:
    """The ``/v1/best-move`` answer from a full analysis answer."""
    return {
        "cached": full["cached"],
        "position": full["position"],
        "perspective": full["perspective"],
        "best_move": full["best_moves"][0] if full["best_moves"] else None,
        "best_moves": full["best_moves"],
        "value": full["value"],
        "exact": full["exact"],
        "lower": full["lower"],
        "upper": full["upper"],
    }


def analyse_request(
    position: object,
    rules: object = "kalah",
    *,
    time_ms: int | None = None,
    depth: int | None = None,
    nodes: int | None = None,
    analyser: Analyser | None = None,
) -> dict[str, Any]:
    """The ``POST /v1/analysis`` code path without HTTP (for ``kalah analyse``): the same
    parsing, limits, cache and answer. Raises KalahError or ApiProblem (``.field`` names the
    bad input). Without ``analyser``, one from the environment's settings is kept per process."""
    if analyser is None:
        analyser = _default_analyser()
    parsed_rules = parse_rules(rules)
    parsed_position = parse_position_field(position, parsed_rules)
    limits = effective_limits(analyser.settings, time_ms, depth, nodes, prefix="limits.")
    return analyser.analyse(parsed_position, parsed_rules, limits).json()


_DEFAULT: list[Analyser] = []


def _default_analyser() -> Analyser:
    if not _DEFAULT:
        from ..cache import make_cache
        from ..config import load_settings

        settings = load_settings()
        cache = make_cache(settings, max_connections=2)
        _DEFAULT.append(Analyser(settings, cache))
    return _DEFAULT[0]


def answer_body(
    position: Position, rules: Rules, limits: Limits, analysis: solver.Analysis
) -> bytes:
    """The JSON answer without the ``cached`` flag (see the schema ``AnalysisAnswer``)."""
    body = {
        "position": position.compact(),
        "board": position.to_json(),
        "rules": rules.to_json(),
        "perspective": "side_to_move",
        "to_move": position.to_move.value,
        "value": analysis.value,
        "exact": analysis.exact,
        "lower": analysis.lower,
        "upper": analysis.upper,
        "best_moves": list(analysis.best_moves),
        "moves": [
            {
                "move": m.move,
                "value": m.value,
                "exact": m.exact,
                "lower": m.lower,
                "upper": m.upper,
                "extra_turn": m.extra_turn,
                "captured": m.captured,
                "position": m.position.compact(),
            }
            for m in analysis.moves
        ],
        "pv": [list(turn) for turn in analysis.pv],
        "depth": analysis.depth,
        "nodes": analysis.nodes,
        "time_ms": round(analysis.time_ms, 3),
        "over": analysis.over,
        "limits": limits.to_json(),
        "engine": engine_version(),
    }
    return json.dumps(body, separators=(",", ":")).encode()


def _minimax(position: Position, rules: Rules) -> int:
    """The exact value by plain minimax (tiny positions only: the engine self-test)."""
    moves = legal_moves(position, rules)
    if not moves:
        from kalah_core.game import outcome

        final = outcome(position, rules)
        assert final is not None
        south, north = final.score
        return south - north if position.to_move.value == "south" else north - south
    best = None
    for move in moves:
        result = play(position, rules, move)
        value = _minimax(result.after, rules)
        if result.after.to_move is not position.to_move:
            value = -value
        best = value if best is None else max(best, value)
    assert best is not None
    return best
