"""Building the deep book (``kalah book deep``): see :mod:`kalah_core.deepbook`.

One position's record is a pure function of (rules, board, budget), :func:`deep_record`, so a
build is a map of it over the positions of the first sowings: the task kind
``deepbook.record`` of :mod:`kalah_core.tasks`, run by any of its executors (local processes,
or the service's Redis queue and its ``kalah worker`` processes on any machines).

A record, with node budgets (so the same build gives the same book on any machine):

1. the deep estimate: one depth-limited analysis deepening until ``estimate_nodes`` (the last
   whole depth counts), on an emptied table: every move's estimate and the best line;
2. proven bounds on every move's value within ``bounds_nodes``: null-window tests of the
   position the move leads to, at thresholds stepping from far from the move's estimate
   towards it (``LADDER``); a test that runs
   out of its budget is tried again with twice the budget. After one cheap test a side of
   every move, the tests go where the position's bounds are decided: the upper side of the
   move with the highest upper bound, and the lower side of the best-estimated move.

Then :func:`back_up` tightens each record's bounds with those of the positions its moves lead
to, deepest first: the frontier's tests bound the start as well.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from .book import BookError
from .deepbook import (
    DeepRecord,
    DeepSection,
    MoveBound,
    deep_key,
    find_deep_key,
    key_position,
    lead,
)
from .egdb import EndgameDatabase
from .game import legal_moves, play
from .position import Position
from .proofs import HEURISTIC_MAX_DEPTH
from .rules import Rules
from .solver import Engine
from .tasks import Executor, Json, LocalExecutor, Task, task

LADDER = (48, 40, 34, 30, 26, 22, 18, 14, 10, 8, 6, 4, 2)
"""Distances from a move's estimate of its bounds tests, in order: a test far from the value
is cheap, one near it may take hours."""
FIRST_SHARE = 0.1
"""The share of a record's bounds budget for one test a side of every move."""


@dataclass(frozen=True, slots=True)
class DeepBudget:
    """What one record may spend: nodes for the estimate and for the bounds tests, the table,
    and the endgame databases (paths) its searches probe."""

    estimate_nodes: int
    bounds_nodes: int
    tt_mb: int = 256
    databases: tuple[str, ...] = ()


_ENGINES: dict[tuple[int, tuple[str, ...], str], Engine] = {}
_WARM: dict[tuple[int, tuple[str, ...], str], str] = {}
"""The engines whose table holds nothing but the exact searches of one warm run (its token)."""


def _engine(rules: Rules, budget: DeepBudget, warm: str | None = None, threads: int = 1) -> Engine:
    """This process's engine for the budget's table and databases, emptied, its exact searches
    on ``threads`` threads; with ``warm`` (a run's token), its table kept as the last use left
    it when that was the same run's (whose searches are all exact: every entry a proven bound,
    sound for any later search)."""
    slot = (budget.tt_mb, budget.databases, rules.key)
    engine = _ENGINES.get(slot)
    if engine is None:
        _ENGINES.clear()  # one table at a time
        _WARM.clear()
        engine = Engine(tt_mb=budget.tt_mb)
        for path in budget.databases:
            engine.attach(EndgameDatabase.open(path, rules))
        _ENGINES[slot] = engine
    if engine.threads != threads:
        engine.threads = threads
    if warm is None or _WARM.get(slot) != warm:
        engine.clear()
    if warm is None:
        _WARM.pop(slot, None)
    else:
        _WARM[slot] = warm
    return engine


def _release() -> None:
    _ENGINES.clear()
    _WARM.clear()


def deep_record(rules: Rules, key: bytes, budget: DeepBudget) -> DeepRecord:
    """The record of the position ``key`` (see the module docstring)."""
    engine = _engine(rules, budget)
    position = key_position(key, rules)
    estimate = engine.analyse(
        position, rules, depth=HEURISTIC_MAX_DEPTH, nodes=max(1, budget.estimate_nodes)
    )
    diff = lead(position)
    moves = {int(m.move): [m.value, m.lower, m.upper] for m in estimate.moves}
    results = {int(m): play(position, rules, m) for m in legal_moves(position, rules)}
    _bounds(engine, rules, moves, results, budget.bounds_nodes)
    bounds = tuple(
        MoveBound(house, v - diff, low - diff, high - diff)
        for house, (v, low, high) in sorted(moves.items())
    )
    pv = tuple(int(m) for turn in estimate.pv for m in turn)
    return _record(key, estimate.depth, bounds, pv)


@task("deepbook.record", release=_release)
def record_task(params: dict[str, Json], items: Sequence[Json]) -> Iterator[Json]:
    """The records (JSON) of positions (hex keys) under ``params``: rules and budget."""
    rules = Rules.from_json(params["rules"])
    raw = dict(params["budget"])
    budget = DeepBudget(**{**raw, "databases": tuple(raw["databases"])})
    for item in items:
        yield deep_record(rules, bytes.fromhex(item), budget).to_json()


def _bounds(
    engine: Engine,
    rules: Rules,
    moves: dict[int, list[int]],
    results: dict[int, Any],
    nodes: int,
) -> None:
    """Narrow ``moves`` (house: [estimate, lower, upper]) by null-window tests within
    ``nodes``: first one test a side of every move at the ladder's first rung (a share of
    FIRST_SHARE of the budget), then, alternately, the upper side of the move with the highest
    upper bound (it is the position's upper bound) and the lower side of the best-estimated
    move (whose lower bound is the position's), each climbing the ladder. A test that runs
    out of its budget is tried again, on the warm table, with twice the budget."""
    s = engine.searcher
    total = rules.total_seeds
    rung: dict[tuple[int, str], int] = {}
    left = nodes

    def threshold(house: int, side: str) -> int | None:
        value, low, high = moves[house]
        while rung.setdefault((house, side), 0) < len(LADDER):
            distance = LADDER[rung[(house, side)]]
            # "value >= beta", beta of the values' parity (that of the seeds in the game)
            t = value - distance if side == "low" else value + distance + 1
            t += (t - total) % 2
            if low < t <= high:
                return t
            rung[(house, side)] += 1
        return None

    def run(house: int, side: str, cap: int) -> bool | None:
        """One test (None: out of budget; else whether it was worth a try)."""
        nonlocal left
        beta = threshold(house, side)
        if beta is None:
            return False
        s.set_budget(0.0, max(1, min(cap, left)))
        before = s.nodes
        bound = move_test(engine, rules, results[house], beta)
        left -= s.nodes - before
        if bound is None:
            return None
        if bound >= beta:
            moves[house][1] = max(moves[house][1], bound)
        else:
            moves[house][2] = min(moves[house][2], bound)
        rung[(house, side)] += 1
        return True

    open_moves = [h for h, (_, low, high) in moves.items() if low < high]
    if not open_moves:
        return
    first = int(nodes * FIRST_SHARE) // (2 * len(open_moves))
    for house in open_moves:
        for side in ("high", "low"):
            if left > 0:
                run(house, side, first)
    caps: dict[tuple[int, str], int] = {}
    side = "high"
    stuck: set[str] = set()
    while left > 0 and len(stuck) < 2:
        side = "low" if side == "high" else "high"
        if side == "high":
            top = max(high for _, _, high in moves.values())
            picks = [h for h, (_, low, high) in moves.items() if high == top and low < high]
        else:
            best = max(moves.values(), key=lambda m: (m[0], -m[2]))
            picks = [h for h, m in moves.items() if m is best and m[1] < m[2]]
        picks = [h for h in picks if threshold(h, side) is not None]
        if not picks:
            stuck.add(side)
            continue
        stuck.discard(side)
        house = picks[0]
        cap = caps.setdefault((house, side), max(1, left // 8))
        if run(house, side, cap) is None:
            caps[(house, side)] = 2 * cap


def _record(
    key: bytes, depth: int | None, moves: tuple[MoveBound, ...], pv: tuple[int, ...]
) -> DeepRecord:
    lower = max(m.lower for m in moves)
    upper = max(m.upper for m in moves)
    return DeepRecord(key, None if lower == upper else depth, lower, upper, moves, pv)


def move_test(engine: Engine, rules: Rules, result: Any, beta: int) -> int | None:
    """A null-window test of "the move's value >= beta" on the position it leads to: a
    proven bound on the move's value (>= beta: a lower bound, else an upper bound), or None
    when the budget ran out."""
    s = engine.searcher
    if result.extra_turn:
        return s.probe(result.after, rules, beta - 1, beta)
    v = s.probe(result.after, rules, -beta, -beta + 1)
    return None if v is None else -v


def levels(rules: Rules, sowings: int) -> list[list[bytes]]:
    """The keys first reached after 0, 1, ..., ``sowings`` sowings (games over left out)."""
    start = Position.start(rules)
    seen = {deep_key(start, rules)}
    found = [[deep_key(start, rules)]]
    for _ in range(sowings):
        level = []
        for key in found[-1]:
            position = key_position(key, rules)
            for move in legal_moves(position, rules):
                result = play(position, rules, move)
                if result.over or result.after.swap_available:
                    continue
                child = deep_key(result.after, rules)
                if child not in seen:
                    seen.add(child)
                    level.append(child)
        found.append(level)
    return found


def back_up(rules: Rules, records: dict[bytes, DeepRecord]) -> dict[bytes, DeepRecord]:
    """Every record's bounds tightened by those of the records its moves lead to, repeated
    until nothing changes (bounds only narrow: a few sweeps)."""
    records = dict(records)
    changed = True
    while changed:
        changed = False
        for key, record in records.items():
            position = key_position(key, rules)
            diff = lead(position)
            moves = []
            for m in record.moves:
                result = play(position, rules, m.house)
                found = None if result.over else find_deep_key(result.after, rules)
                child = None if found is None else records.get(found)
                low, high = m.lower, m.upper
                if child is not None and not result.after.swap_available:
                    c = lead(result.after)
                    c_low, c_high = child.lower + c, child.upper + c
                    if not result.extra_turn:
                        c_low, c_high = -c_high, -c_low
                    low, high = max(low, c_low - diff), min(high, c_high - diff)
                moves.append(replace(m, lower=low, upper=high))
            new = _record(key, record.depth, tuple(moves), record.pv)
            if (new.lower, new.upper, new.moves) != (record.lower, record.upper, record.moves):
                records[key] = new
                changed = True
    return records


def build_deep_section(
    rules: Rules,
    sowings: int,
    budgets: Sequence[DeepBudget],
    *,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    until: float | None = None,
    stream: TextIO | None = None,
) -> DeepSection:
    """The deep book of ``rules`` to ``sowings`` sowings: ``budgets[i]`` for the positions
    first reached after ``i`` sowings (the last for deeper ones), the start first, on
    ``executor`` (default: this process), one position a chunk. Records
    are appended to ``checkpoint`` (JSON lines) as they come, so a build resumes; with
    ``until`` (a ``time.time()``) no level starts after it, and the section holds the levels
    done whole."""
    stream = stream or sys.stderr
    found = levels(rules, sowings)
    path = Path(checkpoint) if checkpoint else None
    records = _checkpointed(path)
    started = time.perf_counter()
    whole = -1
    for depth, keys in enumerate(found):
        todo = [k for k in keys if k not in records]
        if todo and until is not None and time.time() > until:
            stream.write(f"deep book {rules.key}: stopped before sowing {depth}\n")
            break
        budget = budgets[min(depth, len(budgets) - 1)]
        _run_records(
            rules, budget, todo, records, executor, path, stream, f"sowing {depth}", started
        )
        whole = depth
    held = {k: records[k] for level in found[: whole + 1] for k in level}
    elapsed = round(time.perf_counter() - started, 1)
    build = {"budgets": [asdict(b) | {"databases": _names(b)} for b in budgets], "seconds": elapsed}
    return DeepSection(rules, whole, back_up(rules, held), build)


def extend_deep_section(
    section: DeepSection,
    positions: Sequence[Position],
    budget: DeepBudget,
    *,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    stream: TextIO | None = None,
    label: Sequence[str] = (),
) -> DeepSection:
    """``section`` with the records of ``positions`` added (those it lacks; each with
    ``budget``), every record then backed up again. Records of positions past the section's
    sowings, where a game is known to go (``kalah book deep --after``): the same pure
    function :func:`deep_record` as the build's, so the same command gives the same records.
    ``label`` (the games, as given) goes into the section's build notes with the budget."""
    stream = stream or sys.stderr
    rules = section.rules
    records = dict(section.records)
    todo: list[bytes] = []
    for position in positions:
        if position.swap_available:
            raise BookError(f"{position.compact()}: a swap is pending; no record holds it")
        key = deep_key(position, rules)
        if key not in records and key not in todo:
            todo.append(key)
    path = Path(checkpoint) if checkpoint else None
    records.update((k, r) for k, r in _checkpointed(path).items() if k in todo)
    added = bool(todo)
    todo = [k for k in todo if k not in records]
    started = time.perf_counter()
    _run_records(rules, budget, todo, records, executor, path, stream, "after", started)
    build = dict(section.build)
    if added:  # a run that added nothing leaves the notes as they were
        build["after"] = [
            *build.get("after", []),
            {
                "games": list(label),
                "budget": asdict(budget) | {"databases": _names(budget)},
                "seconds": round(time.perf_counter() - started, 1),
            },
        ]
    return DeepSection(rules, section.sowings, back_up(rules, records), build)


def _checkpointed(path: Path | None) -> dict[bytes, DeepRecord]:
    """The records a checkpoint (JSON lines) holds, by key; none without one."""
    records: dict[bytes, DeepRecord] = {}
    if path is not None and path.exists():
        for line in path.read_text().splitlines():
            try:
                record = DeepRecord.from_json(json.loads(line))
            except (ValueError, TypeError):
                continue  # a torn last line
            records[record.key] = record
    return records


def _run_records(
    rules: Rules,
    budget: DeepBudget,
    todo: Sequence[bytes],
    records: dict[bytes, DeepRecord],
    executor: Executor | None,
    path: Path | None,
    stream: TextIO,
    stage: str,
    started: float,
) -> None:
    """The records of ``todo`` on ``executor`` (default: this process), one position a chunk,
    into ``records`` and appended to the checkpoint at ``path`` as they come."""
    work = Task("deepbook.record", {"rules": rules.to_json(), "budget": asdict(budget)})
    results = (executor or LocalExecutor(1)).map(work, [k.hex() for k in todo], 1)
    done = 0
    with open(path if path is not None else os.devnull, "a") as out, closing(results):
        for batch in results:
            for _, raw in batch:
                record = DeepRecord.from_json(raw)
                records[record.key] = record
                out.write(json.dumps(record.to_json()) + "\n")
                out.flush()
                done += 1
                stream.write(
                    f"  {stage}: {done}/{len(todo)}, depth {record.depth}, "
                    f"[{record.lower}, {record.upper}], {time.perf_counter() - started:.0f} s\n"
                )
                stream.flush()


def _names(budget: DeepBudget) -> list[str]:
    return [os.path.basename(p) for p in budget.databases]
