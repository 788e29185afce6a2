"""Building the opening book (``kalah book build``): see :mod:`kalah_core.book`.

For a rule set and a depth N: every board reachable from the start in at most N sowings
(deduplicated in the mover's frame, games already over left out). The boards first reached at
N sowings are solved by the engine, every move exactly (``prove="all"``, no budget), on
``workers`` processes each with its own engine and the endgame databases (mapped once, shared).
Every shallower board's moves lead to boards within N sowings, so their values follow from
the records already made, deepest first, without a search.

Solved boards are appended to a checkpoint file as they come, so an interrupted build resumes
where it stopped.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Sequence
from multiprocessing import get_context
from pathlib import Path
from typing import BinaryIO, TextIO

from .book import NO_MOVE, Section, board_key, rule_key_of
from .egdb import EndgameDatabase
from .errors import InvalidRulesError
from .game import legal_moves, play
from .position import Position, Side
from .rules import Rules

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


def derive(key: bytes, rules: Rules, known: dict[bytes, bytes]) -> bytes:
    """The gains of a board whose every move leads to a known board (or ends the game)."""
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
        mover = after.to_move
        child = max(g for g in _signed(known[board_key(after)]) if g != NO_MOVE)
        child += after.store(mover) - after.store(mover.other)
        gains.append(child if result.extra_turn else -child)
    return _pack(gains)


def _signed(raw: bytes) -> list[int]:
    return [b - 256 if b > 127 else b for b in raw]


def _pack(gains: Sequence[int]) -> bytes:
    return bytes(g & 0xFF for g in gains)


# -- the frontier, on worker processes -------------------------------------------------------

_WORKER: dict[str, object] = {}


def _init_worker(rules: Rules, databases: Sequence[str], tt_mb: int) -> None:
    from .solver import Engine

    engine = Engine(tt_mb=tt_mb)
    for path in databases:
        engine.attach(EndgameDatabase.open(path, rules))
    _WORKER["engine"] = engine
    _WORKER["rules"] = rules


def _solve_chunk(keys: list[bytes]) -> list[tuple[bytes, bytes]]:
    from .solver import Engine

    engine = _WORKER["engine"]
    rules = _WORKER["rules"]
    assert isinstance(engine, Engine) and isinstance(rules, Rules)
    out = []
    for key in keys:
        analysis = engine.analyse(board_position(key), rules, prove="all")
        if not analysis.exact:  # pragma: no cover - an unbounded search always proves
            raise RuntimeError(f"book: {key.hex()} not solved")
        by_house = {m.move: m.value for m in analysis.moves}
        gains = [by_house.get(house, NO_MOVE) for house in range(1, rules.houses + 1)]
        out.append((key, _pack(gains)))
    return out


def _read_checkpoint(path: Path, width: int) -> dict[bytes, bytes]:
    done: dict[bytes, bytes] = {}
    if path.exists():
        raw = path.read_bytes()
        whole = len(raw) - len(raw) % width  # a torn last record is dropped
        for i in range(0, whole, width):
            record = raw[i : i + width]
            done[record[: 2 * width // 3]] = record[2 * width // 3 :]
    return done


def build_section(
    rules: Rules,
    depth: int,
    databases: Sequence[str | os.PathLike[str]],
    *,
    presets: Sequence[str] = (),
    workers: int = 1,
    tt_mb: int = 256,
    checkpoint: str | os.PathLike[str] | None = None,
    until: float | None = None,
    stream: TextIO | None = None,
) -> Section:
    """The book section of ``rules`` to ``depth`` sowings (see the module docstring). With
    ``until`` (a ``time.time()``) the solving stops then: the section holds the boards solved
    so far and those they decide, and its ``depth`` is the deepest level held whole."""
    key = rule_key_of(rules)
    if key is None:
        raise InvalidRulesError("majority", True, "false: no book under 'majority'")
    base = dataclasses.replace(rules, pie=False)  # the pie rule needs no records of its own
    stream = stream or sys.stderr
    found = levels(base, depth)
    frontier = found[-1]
    width = 3 * base.houses
    done: dict[bytes, bytes] = {}
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt is not None:
        done = _read_checkpoint(ckpt, width)
    todo = [k for k in frontier if k not in done]
    stream.write(
        f"book {key}: {sum(map(len, found)):,} boards within {depth} sowings; "
        f"{len(frontier):,} to solve ({len(frontier) - len(todo):,} from the checkpoint)\n"
    )
    started = time.perf_counter()
    paths = [os.fspath(p) for p in databases]
    with _Checkpoint(ckpt) as append:
        if workers <= 1:
            _init_worker(base, paths, tt_mb)
            results: Iterator[list[tuple[bytes, bytes]]] = map(_solve_chunk, _chunks(todo))
            _collect(results, done, append, len(todo), started, until, stream)
        else:
            ctx = get_context("fork")
            with ctx.Pool(workers, _init_worker, (base, paths, tt_mb)) as pool:
                results = pool.imap(_solve_chunk, _chunks(todo))
                _collect(results, done, append, len(todo), started, until, stream)
    for level in reversed(found[:-1]):
        for board in level:
            try:
                done[board] = derive(board, base, done)
            except KeyError:  # a move leads to a board not solved in time
                continue
    held = [board for level in found for board in level if board in done]
    whole = next(
        (d - 1 for d, level in enumerate(found) if any(b not in done for b in level)), depth
    )
    data = b"".join(board + done[board] for board in sorted(set(held)))
    stream.write(
        f"book {key}: {len(set(held)):,} boards, whole to {whole} sowings, "
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


def _chunks(keys: list[bytes]) -> Iterator[list[bytes]]:
    for i in range(0, len(keys), CHUNK):
        yield keys[i : i + CHUNK]


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
    started: float,
    until: float | None,
    stream: TextIO,
) -> None:
    count = 0
    shown = 0.0
    for records in results:
        if until is not None and time.time() > until:
            stream.write(f"  stopped at the deadline: {count:,}/{total:,} solved\n")
            return
        append(records)
        done.update(records)
        count += len(records)
        now = time.perf_counter()
        if now - shown > 10 or count == total:
            shown = now
            rate = count / max(now - started, 1e-9)
            eta = (total - count) / rate if rate else 0.0
            stream.write(
                f"  {count:,}/{total:,} solved, {rate:.1f}/s, "
                f"{now - started:.0f} s elapsed, ETA {eta:.0f} s\n"
            )
            stream.flush()
