"""The opening book: every move's exact value in every position of the first sowings.

Built once from the endgame databases (:mod:`kalah_core.book_build`, ``kalah book build``),
shipped inside the package (``data/book.bin``) and probed before any search: a hit is exact
and costs a binary search and one ``play`` per move.

What it holds. Outside ``majority`` the future of a position depends only on its houses, seen
from the player to move (stores only add the store difference so far), so a record is keyed
by the mover's houses then the opponent's, and holds for each house the *future gain* of
sowing it: the final store difference for the mover, minus the store difference now (-128
for an empty house). The value of a move is its gain plus the mover's store minus the
opponent's. One section per endgame-database rule key (houses, capture, end, remaining) serves
every rule set sharing it, whatever ``seeds`` and ``pie``:

- with the swap pending at North's first turn (``pie``) the sowings lead where they would
  without the pie rule, and the swap hands North's seat to the opponent, who then faces
  exactly the board North faced: the swap is worth minus the position's value without it;
- South's first turn under ``pie`` (the swap still to come) follows from those at probe
  time: a few ``play`` calls and look-ups, no records of its own;
- after a swap the board seen from the player to move is one the book already keys.

File format: ``MAGIC``, a 4-byte little-endian header length, a JSON header
``{"sections": [{"rules", "houses", "depth", "records", "presets"}], ...}``, then each
section's records in header order, sorted by key: ``2 * houses`` key bytes, ``houses`` signed
gain bytes. Written uncompressed, so that a process's start reads it at once (the xz of the
same bytes, as books were written before, still reads: it took a ``kalah solve`` 12 ms to
unpack); the wheel and git compress it anyway.
"""

from __future__ import annotations

import json
import lzma
import os
import struct
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .egdb import RuleKey
from .errors import KalahError
from .files import write_atomic
from .game import SWAP, Move, MoveResult, group_turns, legal_moves, play
from .position import Position, Side
from .results import Analysis, MoveValue
from .rules import Rules

MAGIC = b"KALAHBOOK1\n"
NO_MOVE = -128
SHIPPED = Path(__file__).parent / "data" / "book.bin"
"""The book built into the package (``kalah book build`` writes it by default)."""


class BookError(KalahError):
    """A book file is missing or damaged."""

    def __init__(self, message: str) -> None:
        self.field = "book"
        super().__init__(message)


def rule_key_of(rules: Rules) -> RuleKey | None:
    """The section a rule set reads (None under ``majority``: no book can serve it)."""
    if rules.majority:
        return None
    return RuleKey(rules.houses, rules.capture, rules.end, rules.remaining)


MAX_KEY_COUNT = 255
"""The largest count a record key holds: one byte a pit. A position may hold 600 seeds, so
one pit can hold more; such a position is in no book (its probes find nothing)."""


def packed(counts: Sequence[int]) -> bytes | None:
    """``counts`` one byte each, or None when one does not fit a byte."""
    if any(count > MAX_KEY_COUNT for count in counts):
        return None
    return bytes(counts)


def find_key(position: Position) -> bytes | None:
    """The record key of ``position`` (the mover's houses, then the opponent's), or None when
    no book can hold it: what every probe uses."""
    me = position.to_move
    return packed(position.side(me) + position.side(me.other))


def board_key(position: Position) -> bytes:
    """The record key of a position a book build reaches (a :class:`BookError` when a count
    does not fit: the build cannot record it)."""
    key = find_key(position)
    if key is None:
        raise BookError(
            f"no book can hold {position.compact()}: a house holds more than {MAX_KEY_COUNT} seeds"
        )
    return key


@dataclass(frozen=True, slots=True)
class Section:
    """The records of one rule key, sorted by key: fixed-width rows of ``data``."""

    key: RuleKey
    depth: int
    presets: tuple[str, ...]
    data: bytes

    @property
    def width(self) -> int:
        return 3 * self.key.houses

    def __len__(self) -> int:
        return len(self.data) // self.width

    def __getitem__(self, i: int) -> bytes:  # the i-th key: what bisect compares
        start = i * self.width
        return self.data[start : start + 2 * self.key.houses]

    def gains(self, board: bytes) -> tuple[int, ...] | None:
        """The future gain of sowing each house (``NO_MOVE`` for an empty one), or None."""
        i = bisect_left(self, board)
        if i == len(self) or self[i] != board:
            return None
        start = i * self.width + 2 * self.key.houses
        return struct.unpack_from(f"{self.key.houses}b", self.data, start)

    def info(self) -> dict[str, Any]:
        return {
            "rules": str(self.key),
            "presets": list(self.presets),
            "depth": self.depth,
            "positions": len(self),
        }


class Book:
    """An opening book: its sections by rule key."""

    def __init__(self, sections: list[Section], meta: dict[str, Any] | None = None) -> None:
        self.sections = {section.key: section for section in sections}
        self.meta = meta or {}

    # -- reading and writing ---------------------------------------------------------------

    @classmethod
    def from_bytes(cls, raw: bytes, origin: str = "book") -> Book:
        payload = raw
        if not raw.startswith(MAGIC):  # an xz-compressed book
            try:
                payload = lzma.decompress(raw)
            except lzma.LZMAError as error:
                raise BookError(f"{origin}: not an opening book ({error})") from None
        if not payload.startswith(MAGIC):
            raise BookError(f"{origin}: not an opening book")
        (length,) = struct.unpack_from("<I", payload, len(MAGIC))
        start = len(MAGIC) + 4
        meta = json.loads(payload[start : start + length])
        offset = start + length
        sections = []
        for info in meta.pop("sections"):
            key = RuleKey(info["houses"], info["capture"], info["end"], info["remaining"])
            size = info["records"] * 3 * key.houses
            data = payload[offset : offset + size]
            if len(data) != size:
                raise BookError(f"{origin}: truncated section {key}")
            sections.append(Section(key, info["depth"], tuple(info["presets"]), data))
            offset += size
        return cls(sections, meta)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Book:
        try:
            raw = Path(path).read_bytes()
        except OSError as error:
            raise BookError(f"cannot read opening book {path}: {error}") from None
        return cls.from_bytes(raw, str(path))

    def to_bytes(self) -> bytes:
        meta = dict(self.meta)
        meta["sections"] = [
            {
                "houses": s.key.houses,
                "capture": s.key.capture,
                "end": s.key.end,
                "remaining": s.key.remaining,
                "depth": s.depth,
                "records": len(s),
                "presets": list(s.presets),
            }
            for s in self.sections.values()
        ]
        header = json.dumps(meta, sort_keys=True).encode()
        return b"".join(
            [MAGIC, struct.pack("<I", len(header)), header]
            + [s.data for s in self.sections.values()]
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically (a temporary file renamed into place)."""
        write_atomic(path, self.to_bytes())

    def info(self) -> list[dict[str, Any]]:
        return [section.info() for section in self.sections.values()]

    # -- probing ---------------------------------------------------------------------------

    def move_values(self, position: Position, rules: Rules) -> dict[Move, int] | None:
        """Every legal move's exact value for the player to move, or None when the book does
        not hold ``position`` (or the game is over there)."""
        key = rule_key_of(rules)
        section = self.sections.get(key) if key is not None else None
        if section is None or position.houses != section.key.houses:
            return None  # checked first: an answer from the book names its section
        if position.swap_available and rules.pie and position.to_move is Side.SOUTH:
            return self._first_turn(position, rules)
        board = find_key(position)
        gains = None if board is None else section.gains(board)
        if gains is None:
            return None
        me = position.to_move
        diff = position.store(me) - position.store(me.other)
        values: dict[Move, int] = {i + 1: g + diff for i, g in enumerate(gains) if g != NO_MOVE}
        if not values:
            return None
        if position.swap_available and rules.pie:
            values[SWAP] = -max(values.values())
        return values

    def _first_turn(self, position: Position, rules: Rules) -> dict[Move, int] | None:
        """South's first turn under the pie rule: each sowing leads to North's choice to swap
        (or to South's next sowing after an extra turn), whose values the book gives."""
        values: dict[Move, int] = {}
        for move in legal_moves(position, rules):
            result = play(position, rules, move)
            after = result.after
            me = position.to_move
            if result.over:
                values[move] = after.store(me) - after.store(me.other)
                continue
            child = self.move_values(after, rules)
            if child is None:
                return None
            best = max(child.values())
            values[move] = best if result.extra_turn else -best
        return values or None

    def analysis(self, position: Position, rules: Rules, pv_limit: int = 64) -> Analysis | None:
        """The exact :class:`~kalah_core.solver.Analysis` of a book position, or None: every
        move's value, the best moves, and a principal variation through the book."""
        started = time.perf_counter()
        values = self.move_values(position, rules)
        if values is None:
            return None
        results = [play(position, rules, move) for move in legal_moves(position, rules)]
        moves = sorted(
            (
                MoveValue(
                    r.move,
                    values[r.move],
                    True,
                    values[r.move],
                    values[r.move],
                    r.extra_turn,
                    r.captured,
                    r.after,
                )
                for r in results
            ),
            key=lambda m: (-m.value, move_order(m.move)),
        )
        value = moves[0].value
        best = [m.move for m in moves if m.value == value]
        pv = self._pv(position, rules, pv_limit)
        section = self.sections[RuleKey(rules.houses, rules.capture, rules.end, rules.remaining)]
        extra = {"book": {"depth": section.depth, "rules": str(section.key)}}
        elapsed = round((time.perf_counter() - started) * 1000.0, 3)
        return Analysis(value, True, value, value, best, moves, pv, None, 0, elapsed, extra=extra)

    def _pv(self, position: Position, rules: Rules, limit: int) -> list[list[Move]]:
        """Best moves (the first in house order) while the book holds the position."""
        line: list[MoveResult] = []
        node = position
        while len(line) < limit:
            values = self.move_values(node, rules)
            if values is None:
                break
            move = min(values, key=lambda m: (-values[m], move_order(m)))
            result = play(node, rules, move)
            line.append(result)
            if result.over:
                break
            node = result.after
        return group_turns(line)


def move_order(move: Move) -> int:
    """Houses in order, the swap last: how ties between equal moves are broken."""
    return 99 if move == SWAP else int(move)


@cache
def shipped_digest() -> str:
    """A short digest of the shipped book's bytes ("none" without one): a different book can
    make an answer exact that was not, so the service keys its inexact answers on it."""
    if not SHIPPED.exists():
        return "none"
    import hashlib  # the service's digest only: not every start-up

    return hashlib.sha256(SHIPPED.read_bytes()).hexdigest()[:12]


@cache
def shipped() -> Book:
    """The book inside the package (an empty book when the package was built without one)."""
    if not SHIPPED.exists():
        return Book([])
    return Book.load(SHIPPED)
