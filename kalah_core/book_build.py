"""Building the opening book (``kalah book build``): see :mod:`kalah_core.book`.

For a rule set and a depth N: every board reachable from the start in at most N sowings
(deduplicated in the mover's frame, games already over left out), solved by the engine with
no budget on ``workers`` processes (or any executor of :mod:`kalah_core.tasks`: ``kalah
worker`` processes on other machines, through Redis), each with its own engine (its table warm
from one board to its neighbours) and the endgame databases (mapped once, shared). Two passes
over the boards first reached at N sowings, the frontier:

1. their values (``prove="value"``, about 2.5 times cheaper than every move's). Every
   shallower board's moves lead to boards within N sowings, so every move's value of every
   board within N - 1 sowings follows from them, deepest first, without a search;
2. every move's value of each frontier board (``prove="all"``), the hardest first (by the
   nodes of pass 1): a board the book does not hold is searched at probe time, and the easy
   ones are proven within the default budget with the databases.

Stopped at a deadline, the book holds whatever is whole: after pass 1, depth N - 1 and the
frontier boards solved so far. Solved boards are appended to checkpoint files as they come
(``PATH`` for pass 2, ``PATH.values`` for pass 1), so an interrupted build resumes where it
stopped. A build also starts from the records of an earlier book (``known``): its boards
are not solved again, and the boards its records' moves lead to have their values.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import BinaryIO, TextIO

from .book import NO_MOVE, Section, board_key, rule_key_of
from .databases import headers
from .egdb import EndgameDatabase, rule_key
from .errors import InvalidRulesError
from .game import legal_moves, play
from .position import Position, Side
from .rules import Rules
from .solver import Engine, Prove
from .tasks import Executor, Json, LocalExecutor, Task, task

CHUNK = 16
"""Boards per task: neighbours in breadth-first order share much of their trees (and so the
engine's transposition table)."""


def board_position(key: bytes) -> Position:
    """The position of a record key: the mover (as South) to move, stores empty."""
    houses = len(key) // 2
    return Position(tuple(key[:houses]), tuple(key[houses:]), (0, 0), Side.SOUTH, False)


def levels(rules: Rules, depth: int) -> list[list[bytes]]:
    """The boards first reached after 0, 1, ..., ``depth`` sowings, in breadth-first order."""
    start = board_key(Position.start(rules))
    seen = {start}
    found = [[start]]
    for _ in range(depth):
        level = []
        for key in found[-1]:
            position = board_position(key)
            for move in legal_moves(position, rules):
                result = play(position, rules, move)
                child = board_key(result.after)
                if not result.over and child not in seen:
                    seen.add(child)
                    level.append(child)
        found.append(level)
    return found


def derive(
    key: bytes, rules: Rules, known: dict[bytes, bytes], values: dict[bytes, int] | None = None
) -> bytes:
    """The gains of a board whose every move leads to a known board (its gains in ``known``,
    or its value in ``values``) or ends the game."""
    position = board_position(key)
    me = position.to_move
    gains = []
    for house in range(1, rules.houses + 1):
        if position.south[house - 1] == 0:
            gains.append(NO_MOVE)
            continue
        result = play(position, rules, house)
        after = result.after
        if result.over:
            gains.append(after.store(me) - after.store(me.other))
            continue
        board = board_key(after)
        if values is not None and board not in known:
            child = values[board]
        else:
            child = max(g for g in _signed(known[board]) if g != NO_MOVE)
        child += _lead(after)
        gains.append(child if result.extra_turn else -child)
    return _pack(gains)


def _lead(position: Position) -> int:
    """The store difference for the player to move: a board's value is its future gain plus
    this."""
    mover = position.to_move
    return position.store(mover) - position.store(mover.other)


def _adopt(
    known: Section,
    rules: Rules,
    wanted: set[bytes],
    frontier: set[bytes],
    done: dict[bytes, bytes],
    solved: dict[bytes, bytes],
) -> None:
    """Take the records of ``known`` for the boards ``wanted``, and the values of the
    ``frontier`` boards their moves lead to (``derive`` backwards; cost unknown: 0 nodes)."""
    width, board = known.width, 2 * known.key.houses
    for i in range(0, len(known.data), width):
        key, gains = known.data[i : i + board], known.data[i + board : i + width]
        if key in wanted:
            done.setdefault(key, gains)
        position = board_position(key)
        for house, gain in enumerate(_signed(gains), 1):
            if gain == NO_MOVE:
                continue
            result = play(position, rules, house)
            child = board_key(result.after)
            if result.over or child not in frontier or child in solved:
                continue
            value = (gain if result.extra_turn else -gain) - _lead(result.after)
            solved[child] = _pack([value]) + bytes(4)


def _signed(raw: bytes) -> list[int]:
    return [b - 256 if b > 127 else b for b in raw]


def _pack(gains: Sequence[int]) -> bytes:
    return bytes(g & 0xFF for g in gains)


# -- the frontier, on an executor (kalah_core.tasks) ----------------------------------------

_ENGINE: dict[str, tuple[Engine, Rules]] = {}
"""This process's engine for the last parameters it solved with (kept warm between chunks)."""


def _engine(params: dict[str, Json]) -> tuple[Engine, Rules]:
    """The engine of ``params`` (rules, databases, tt_mb): this process's, made once. No
    databases named (None): the largest this process finds for the rules (KALAH_EGDB_PATH),
    which changes the nodes a board costs, never its values."""
    name = json.dumps([params["rules"], params["databases"], params["tt_mb"]], sort_keys=True)
    if name not in _ENGINE:
        _ENGINE.clear()  # one table at a time
        rules = Rules.from_json(params["rules"])
        paths = params["databases"]
        if paths is None:
            found = headers().get(rule_key(rules))
            paths = [str(found[0])] if found else []
        engine = Engine(tt_mb=int(params["tt_mb"]))
        for path in paths:
            engine.attach(EndgameDatabase.open(path, rules))
        _ENGINE[name] = (engine, rules)
    return _ENGINE[name]


@task("book.solve", release=_ENGINE.clear)
def solve_boards(params: dict[str, Json], items: Sequence[Json]) -> Iterator[Json]:
    """The records of boards (hex keys), in hex: every move's gain, or (``value_only``) the
    board's value as one signed byte and the search's nodes as 4 little-endian bytes."""
    engine, rules = _engine(params)
    value_only = bool(params["value_only"])
    prove: Prove = "value" if value_only else "all"
    for item in items:
        key = bytes.fromhex(item)
        analysis = engine.analyse(board_position(key), rules, prove=prove)
        if not analysis.exact:  # pragma: no cover - an unbounded search always proves
            raise RuntimeError(f"book: {item} not solved")
        if value_only:
            nodes = min(analysis.nodes, 2**32 - 1)  # only an order: saturated
            yield (_pack([analysis.value]) + nodes.to_bytes(4, "little")).hex()
            continue
        by_house = {m.move: m.value for m in analysis.moves}
        yield _pack([by_house.get(house, NO_MOVE) for house in range(1, rules.houses + 1)]).hex()


def _read_checkpoint(path: Path | None, width: int, key_width: int) -> dict[bytes, bytes]:
    done: dict[bytes, bytes] = {}
    if path is not None and path.exists():
        raw = path.read_bytes()
        whole = len(raw) - len(raw) % width  # a torn last record is dropped
        for i in range(0, whole, width):
            record = raw[i : i + width]
            done[record[:key_width]] = record[key_width:]
    return done


def build_section(
    rules: Rules,
    depth: int,
    databases: Sequence[str | os.PathLike[str]] | None,
    *,
    presets: Sequence[str] = (),
    workers: int = 1,
    tt_mb: int = 256,
    checkpoint: str | os.PathLike[str] | None = None,
    until: float | None = None,
    stream: TextIO | None = None,
    known: Section | None = None,
    executor: Executor | None = None,
) -> Section:
    """The book section of ``rules`` to ``depth`` sowings (see the module docstring). With
    ``until`` (a ``time.time()``) the solving stops then: the section holds the boards solved
    so far and those they decide, and its ``depth`` is the deepest level held whole. The
    boards are solved on ``executor`` (default: ``workers`` local processes), ``databases``
    None: those each solving process finds for the rules."""
    key = rule_key_of(rules)
    if key is None:
        raise InvalidRulesError("majority", True, "false: no book under 'majority'")
    base = dataclasses.replace(rules, pie=False)  # the pie rule needs no records of its own
    stream = stream or sys.stderr
    found = levels(base, depth)
    frontier = found[-1]
    board = 2 * base.houses
    ckpt = Path(checkpoint) if checkpoint else None
    values_ckpt = ckpt.with_name(ckpt.name + ".values") if ckpt is not None else None
    done = _read_checkpoint(ckpt, board + base.houses, board)
    solved = _read_checkpoint(values_ckpt, board + 5, board)  # value byte, nodes
    if known is not None:
        _adopt(known, base, {b for level in found for b in level}, set(frontier), done, solved)
    stream.write(
        f"book {key}: {sum(map(len, found)):,} boards within {depth} sowings, "
        f"{len(frontier):,} at {depth}: {len(solved):,} values and {len(done):,} with every "
        "move from the checkpoint\n"
    )
    started = time.perf_counter()
    paths = None if databases is None else [os.fspath(p) for p in databases]
    runner = executor or LocalExecutor(workers)

    def run(
        todo: list[bytes], value_only: bool, into: dict[bytes, bytes], path: Path | None
    ) -> bool:
        label = "values" if value_only else "every move"
        if until is not None and time.time() > until:  # no worker started for nothing
            stream.write(f"  stopped at the deadline: 0/{len(todo):,} solved ({label})\n")
            return False
        params = {"rules": base.to_json(), "databases": paths, "tt_mb": tt_mb}
        work = Task("book.solve", {**params, "value_only": value_only})
        results = runner.map(work, [k.hex() for k in todo], CHUNK)
        with _Checkpoint(path) as append, closing(results):
            records = ([(todo[i], bytes.fromhex(r)) for i, r in batch] for batch in results)
            return _collect(records, into, append, len(todo), until, stream, label)

    # Pass 1: the frontier's values (those with every move solved already have theirs).
    todo = [k for k in frontier if k not in done and k not in solved]
    finished = run(todo, True, solved, values_ckpt) if todo else True
    # Pass 2: every move of the frontier, the boards whose value cost most nodes first.
    if finished:

        def cost(k: bytes) -> tuple[int, int]:  # nodes unknown (0): more seeds, harder
            nodes = int.from_bytes(solved[k][1:], "little") if k in solved else 0
            return -nodes, -sum(k)

        todo = sorted((k for k in frontier if k not in done), key=cost)
        if todo:
            run(todo, False, done, ckpt)
    values = {k: _signed(v[:1])[0] for k, v in solved.items()}
    # Deepest first, repeated while it adds boards: a move may lead to a board first reached
    # at the same or a shallower level (a transposition), derived only on a later sweep.
    missing = [b for level in reversed(found[:-1]) for b in level if b not in done]
    while missing:
        left = []
        for parent in missing:
            try:
                done[parent] = derive(parent, base, done, values)
            except KeyError:  # a move leads to a board not solved (or derived) yet
                left.append(parent)
        if len(left) == len(missing):
            break
        missing = left
    held = {b for level in found for b in level if b in done}
    whole = next(
        (d - 1 for d, level in enumerate(found) if any(b not in done for b in level)), depth
    )
    data = b"".join(b + done[b] for b in sorted(held))
    stream.write(
        f"book {key}: {len(held):,} boards, whole to {whole} sowings, "
        f"in {time.perf_counter() - started:.0f} s\n"
    )
    return Section(key, whole, tuple(presets), data)


def merge(old: Section, new: Section) -> Section:
    """Every board of both (they agree: values are exact), whole to the deeper depth."""
    width, board = new.width, 2 * new.key.houses
    records: dict[bytes, bytes] = {}
    for section in (old, new):
        for i in range(0, len(section.data), width):
            records[section.data[i : i + board]] = section.data[i : i + width]
    data = b"".join(records[key] for key in sorted(records))
    return Section(new.key, max(old.depth, new.depth), new.presets, data)


class _Checkpoint:
    """Appends solved records to the checkpoint file (if any), flushed per chunk."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.file: BinaryIO | None = None

    def __enter__(self) -> _Checkpoint:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(self.path, "ab")
        return self

    def __call__(self, records: list[tuple[bytes, bytes]]) -> None:
        if self.file is not None:
            self.file.write(b"".join(k + g for k, g in records))
            self.file.flush()

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()


def _collect(
    results: Iterator[list[tuple[bytes, bytes]]],
    done: dict[bytes, bytes],
    append: _Checkpoint,
    total: int,
    until: float | None,
    stream: TextIO,
    label: str,
) -> bool:
    """Store the solved records as they come; False when stopped at the deadline."""
    count = 0
    shown = 0.0
    started = time.perf_counter()
    for records in results:
        if until is not None and time.time() > until:
            stream.write(f"  stopped at the deadline: {count:,}/{total:,} solved ({label})\n")
            return False
        append(records)
        done.update(records)
        count += len(records)
        now = time.perf_counter()
        if now - shown > 10 or count == total:
            shown = now
            rate = count / max(now - started, 1e-9)
            eta = (total - count) / rate if rate else 0.0
            stream.write(
                f"  {label}: {count:,}/{total:,} solved, {rate:.1f}/s, "
                f"{now - started:.0f} s elapsed, ETA {eta:.0f} s\n"
            )
            stream.flush()
    return True
