"""The deep book: deep estimates and proven bounds for the first sowings of 6-seed games.

Where no proof reaches in a request's budget (the 6-seed starts of ``kalah-ru``, ``piet-hein``
and KGP 6x6), the engine's own long searches, made once (:mod:`kalah_core.deepbook_build`),
give each position of the first sowings:

- a deep estimate: every move's value from one depth-limited search, and the depth it reached;
- proven bounds on every move's value, from time-boxed null-window tests and backed up through
  the book's tree (a move's bounds are also those of the position it leads to);
- the best move's line from that search.

An answer from the deep book is never called exact unless its bounds meet.

What a record is valid for. A section serves one rule set exactly (``Rules.key``, ``pie``
included: no record holds a position with the swap pending). Records are keyed in the mover's
frame: the mover's houses, then the opponent's, and under ``majority`` also the mover's store
then the opponent's, since the stores then decide when the game ends. Outside ``majority`` the
future of a position depends only on its houses (the evaluation too is the store difference
plus a term of the houses), so one record serves every store pair. Values are stored as
*future gains*: the value minus the store difference now (for the mover).

File format: ``lzma`` (xz) of a JSON object ``{"format": FORMAT, "sections": [{"rules": the
rules' JSON, "sowings": N, "build": {...}, "records": [[key hex, depth or null, lower, upper,
[[house, estimate, lower, upper], ...], [pv houses]], ...]}]}``.
"""

from __future__ import annotations

import json
import lzma
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .book import MAX_KEY_COUNT, BookError, packed
from .files import write_atomic
from .game import Move, MoveResult, group_turns, legal_moves, play
from .position import Position, Side
from .results import Analysis, MoveValue
from .rules import PRESETS, Rules

FORMAT = "kalah-deepbook-1"
SHIPPED = Path(__file__).parent / "data" / "deepbook.json.xz"
"""The deep book built into the package."""


@dataclass(frozen=True, slots=True)
class MoveBound:
    """One move of a record: its estimate and proven bounds, as future gains."""

    house: int
    estimate: int
    lower: int
    upper: int


@dataclass(frozen=True, slots=True)
class DeepRecord:
    """A position's deep estimate (``depth`` sowings; None when the search proved it), proven
    bounds on its value and every move's, and the best line (houses), all in future gains."""

    key: bytes
    depth: int | None
    lower: int
    upper: int
    moves: tuple[MoveBound, ...]
    pv: tuple[int, ...]

    @property
    def estimate(self) -> int:
        return max(m.estimate for m in self.moves)

    def to_json(self) -> list[Any]:
        return [
            self.key.hex(),
            self.depth,
            self.lower,
            self.upper,
            [[m.house, m.estimate, m.lower, m.upper] for m in self.moves],
            list(self.pv),
        ]

    @classmethod
    def from_json(cls, raw: Sequence[Any]) -> DeepRecord:
        key, depth, lower, upper, moves, pv = raw
        return cls(
            bytes.fromhex(key),
            depth,
            lower,
            upper,
            tuple(MoveBound(*m) for m in moves),
            tuple(pv),
        )


def find_deep_key(position: Position, rules: Rules) -> bytes | None:
    """The record key of ``position`` (the mover's houses, the opponent's, and under
    ``majority`` the mover's store and the opponent's), or None when a count does not fit a
    byte: no deep book holds such a position. What every probe uses."""
    me = position.to_move
    counts = position.side(me) + position.side(me.other)
    if rules.majority:
        counts += (position.store(me), position.store(me.other))
    return packed(counts)


def deep_key(position: Position, rules: Rules) -> bytes:
    """The record key of a position a deep book build reaches (a :class:`BookError` when a
    count does not fit: the build cannot record it)."""
    key = find_deep_key(position, rules)
    if key is None:
        raise BookError(
            f"no deep book can hold {position.compact()}: a pit holds more than "
            f"{MAX_KEY_COUNT} seeds"
        )
    return key


def key_position(key: bytes, rules: Rules) -> Position:
    """The position of a record key: its mover (as South) to move."""
    houses = rules.houses
    stores = (key[2 * houses], key[2 * houses + 1]) if rules.majority else (0, 0)
    return Position(tuple(key[:houses]), tuple(key[houses : 2 * houses]), stores, Side.SOUTH, False)


def lead(position: Position) -> int:
    """The store difference for the player to move: a value is its future gain plus this."""
    me = position.to_move
    return position.store(me) - position.store(me.other)


@dataclass(slots=True)
class DeepSection:
    """The records of one rule set."""

    rules: Rules
    sowings: int
    records: dict[bytes, DeepRecord]
    build: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules.to_json(),
            "sowings": self.sowings,
            "build": self.build,
            "records": [self.records[k].to_json() for k in sorted(self.records)],
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> DeepSection:
        records = [DeepRecord.from_json(r) for r in raw["records"]]
        return cls(
            Rules(**raw["rules"]),
            raw["sowings"],
            {r.key: r for r in records},
            raw.get("build", {}),
        )

    def info(self) -> dict[str, Any]:
        start = self.records.get(deep_key(Position.start(self.rules), self.rules))
        counts = {"houses": self.rules.houses, "seeds": self.rules.seeds}
        preset = next((n for n, r in PRESETS.items() if r.replace(**counts) == self.rules), None)
        return {
            "rules": preset or self.rules.key,  # KGP's 6x6 board: "kgp" with its counts
            **counts,
            "sowings": self.sowings,
            "positions": len(self.records),
            # the start's stores are empty: its record's bounds are its value's
            "start_lower": start.lower if start else None,
            "start_upper": start.upper if start else None,
        }


class DeepBook:
    """Deep books by rule set (``Rules.key``)."""

    def __init__(self, sections: Sequence[DeepSection] = ()) -> None:
        self.sections = {s.rules.key: s for s in sections}

    @classmethod
    def from_bytes(cls, raw: bytes, origin: str = "deep book") -> DeepBook:
        try:
            data = json.loads(lzma.decompress(raw))
        except (lzma.LZMAError, ValueError) as error:
            raise BookError(f"{origin}: not a deep book ({error})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BookError(f"{origin}: not a deep book")
        return cls([DeepSection.from_json(s) for s in data["sections"]])

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DeepBook:
        try:
            raw = Path(path).read_bytes()
        except OSError as error:
            raise BookError(f"cannot read deep book {path}: {error}") from None
        return cls.from_bytes(raw, str(path))

    def to_bytes(self) -> bytes:
        data = {"format": FORMAT, "sections": [s.to_json() for s in self.sections.values()]}
        text = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
        return lzma.compress(text, preset=9 | lzma.PRESET_EXTREME)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically (a temporary file renamed into place)."""
        write_atomic(path, self.to_bytes())

    def info(self) -> list[dict[str, Any]]:
        return [s.info() for s in self.sections.values()]

    def record(self, position: Position, rules: Rules) -> DeepRecord | None:
        """The record of ``position`` under ``rules``, or None."""
        section = self.sections.get(rules.key)
        if section is None or section.rules != rules or position.swap_available:
            return None
        key = find_deep_key(position, rules)
        return None if key is None else section.records.get(key)

    def proven_bounds(
        self, position: Position, rules: Rules
    ) -> tuple[tuple[int, int], dict[int, tuple[int, int]]] | None:
        """The record's proven bounds on the value of ``position`` and of each move (by
        house), for the player to move; None without a record. A search longer than the deep
        book answers for keeps them: they cost hours of tests a budget cannot repeat."""
        record = self.record(position, rules)
        if record is None:
            return None
        diff = lead(position)
        moves = {m.house: (m.lower + diff, m.upper + diff) for m in record.moves}
        return (record.lower + diff, record.upper + diff), moves

    def analysis(self, position: Position, rules: Rules, pv_limit: int = 64) -> Analysis | None:
        """The :class:`Analysis` a record gives (None without one): every move's estimate
        within its proven bounds, the bounds, the depth, and the record's line. Exact only
        where the bounds meet."""
        started = time.perf_counter()
        record = self.record(position, rules)
        if record is None:
            return None
        diff = lead(position)
        by_house = {m.house: m for m in record.moves}
        results = [play(position, rules, move) for move in legal_moves(position, rules)]
        if {r.move for r in results} != set(by_house):
            return None  # pragma: no cover - a record always has every legal move
        moves = []
        for r in results:
            m = by_house[int(r.move)]
            low, high = m.lower + diff, m.upper + diff
            moves.append(
                MoveValue(
                    r.move,
                    min(max(m.estimate + diff, low), high),
                    low == high,
                    low,
                    high,
                    r.extra_turn,
                    r.captured,
                    r.after,
                )
            )
        moves.sort(key=lambda m: (-m.value, not m.exact, -m.lower, int(m.move)))
        lower = max(record.lower, max(m.lower for m in record.moves)) + diff
        upper = min(record.upper, max(m.upper for m in record.moves)) + diff
        exact = lower == upper
        value = lower if exact else min(max(moves[0].value, lower), upper)
        if exact:
            best: list[Move] = [m.move for m in moves if m.exact and m.value == value]
        else:
            best = [m.move for m in moves if m.value == moves[0].value]  # ties, as the solver
        first = int(moves[0].move)
        line = record.pv if record.pv[:1] == (first,) else (first,)
        pv = self._pv(position, rules, line, pv_limit)
        section = self.sections[rules.key]
        extra = {
            "book": {
                "kind": "deep",
                "depth": record.depth,
                "sowings": section.sowings,
                "rules": rules.key,
            }
        }
        elapsed = round((time.perf_counter() - started) * 1000.0, 3)
        return Analysis(
            value=value,
            exact=exact,
            lower=lower,
            upper=upper,
            best_moves=best,
            moves=moves,
            pv=pv,
            depth=None if exact else record.depth,
            nodes=0,
            time_ms=elapsed,
            extra=extra,
        )

    @staticmethod
    def _pv(
        position: Position, rules: Rules, houses: Sequence[int], limit: int
    ) -> list[list[Move]]:
        line: list[MoveResult] = []
        node = position
        for house in houses[:limit]:
            if house not in legal_moves(node, rules):
                break
            result = play(node, rules, house)
            line.append(result)
            if result.over:
                break
            node = result.after
        return group_turns(line)


@cache
def shipped_digest() -> str:
    """A short digest of the shipped deep book ("none" without one)."""
    if not SHIPPED.exists():
        return "none"
    import hashlib  # the service's digest only: not every start-up

    return hashlib.sha256(SHIPPED.read_bytes()).hexdigest()[:12]


@cache
def shipped() -> DeepBook:
    """The deep book inside the package (an empty one when built without it)."""
    if not SHIPPED.exists():
        return DeepBook()
    return DeepBook.load(SHIPPED)
