"""Positions: the board, the side to move, and the pie flag; their compact notation and JSON form.

A :class:`Position` is an immutable value in absolute terms (South and North). Validity is
reported as flags by :meth:`Position.status`; :meth:`Position.validate` raises an error naming
the first problem. The ``seeds`` rule option only sets the start: any total up to
:data:`MAX_SEEDS` is a valid position.

Compact notation (URL-safe, one canonical spelling per position)::

    <south houses>-<south store>-<north houses>-<north store>-<side>

House counts are one character each, house 1 first: ``0-9``, then ``a-z`` for 10..35, then
``A-Z`` for 36..61; a count of 62 or more is ``~`` followed by two such digits (base 62).
Stores are decimal. The side is ``s`` or ``n``, followed by ``p`` while the pie swap is
available. The start of ``kalah`` is ``444444-0-444444-0-s``.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidNotationError, InvalidPositionError
from .rules import MAX_HOUSES, Rules

MAX_SEEDS = 600
"""The engine's maximum number of seeds in one position (houses and stores): enough for
MAX_HOUSES houses a side of MAX_START_SEEDS seeds (576). Positions of at most 8 houses and 255
seeds are searched on the engine's one-word board, bigger ones on its big board."""

MAX_NOTATION_LENGTH = 64
MAX_JSON_LENGTH = 4096

DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DIGIT_VALUE = {c: i for i, c in enumerate(DIGITS)}
_COMPACT = re.compile(
    r"([0-9a-zA-Z~]+)-(0|[1-9][0-9]{0,2})-([0-9a-zA-Z~]+)-(0|[1-9][0-9]{0,2})-([sn])(p?)"
)
COMPACT_PATTERN = _COMPACT.pattern
"""The compact notation's shape as a regular expression (also valid in JSON Schema)."""


class Side(enum.StrEnum):
    SOUTH = "south"
    NORTH = "north"

    @property
    def other(self) -> Side:
        return Side.NORTH if self is Side.SOUTH else Side.SOUTH


class Status(enum.IntFlag):
    """Problems of a position; ``Status.VALID`` (0) when there are none."""

    VALID = 0
    NEGATIVE_COUNT = 1
    TOO_MANY_SEEDS = 2
    HOUSE_COUNT = 4
    SIDES_DIFFER = 8
    SWAP_WITHOUT_PIE = 16
    SWAP_AFTER_FIRST_TURN = 32
    NOT_AN_INTEGER = 64


_STATUS_TEXT = {
    Status.NOT_AN_INTEGER: "every count must be an integer",
    Status.NEGATIVE_COUNT: "a count is negative",
    Status.TOO_MANY_SEEDS: f"more than {MAX_SEEDS} seeds in all",
    Status.SIDES_DIFFER: "south and north have different numbers of houses",
    Status.HOUSE_COUNT: f"the number of houses is not the rules' (1..{MAX_HOUSES})",
    Status.SWAP_WITHOUT_PIE: "swap_available is true but the rules have no pie rule",
    Status.SWAP_AFTER_FIRST_TURN: "swap_available is true but North's store is not empty "
    "(the swap is only possible before North's first sowing)",
}


@dataclass(frozen=True, slots=True)
class Position:
    """South's and North's houses (house 1 first, from each player's own left), the stores
    ``(south, north)``, the side to move, and whether the pie rule is still pending: North may
    answer ``swap`` at its first turn (the flag is set from the start of a pie game and cleared
    by North's first move or the end of the game)."""

    south: tuple[int, ...]
    north: tuple[int, ...]
    stores: tuple[int, int] = (0, 0)
    to_move: Side = Side.SOUTH
    swap_available: bool = False

    @classmethod
    def start(cls, rules: Rules) -> Position:
        houses = (rules.seeds,) * rules.houses
        return cls(houses, houses, (0, 0), Side.SOUTH, rules.pie)

    @property
    def houses(self) -> int:
        return len(self.south)

    @property
    def total_seeds(self) -> int:
        return sum(self.south) + sum(self.north) + sum(self.stores)

    def side(self, side: Side) -> tuple[int, ...]:
        return self.south if side is Side.SOUTH else self.north

    def store(self, side: Side) -> int:
        return self.stores[0] if side is Side.SOUTH else self.stores[1]

    # ----------------------------------------------------------------- validity

    def status(self, rules: Rules | None = None) -> Status:
        """Every problem of this position (under ``rules`` if given) as flags."""
        status = Status.VALID
        counts = (*self.south, *self.north, *self.stores)
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            return Status.NOT_AN_INTEGER
        if any(c < 0 for c in counts):
            status |= Status.NEGATIVE_COUNT
        if sum(counts) > MAX_SEEDS:
            status |= Status.TOO_MANY_SEEDS
        if len(self.south) != len(self.north):
            status |= Status.SIDES_DIFFER
        if not 1 <= len(self.south) <= MAX_HOUSES or (rules and len(self.south) != rules.houses):
            status |= Status.HOUSE_COUNT
        if self.swap_available:
            if rules is not None and not rules.pie:
                status |= Status.SWAP_WITHOUT_PIE
            if self.stores[1] != 0:
                status |= Status.SWAP_AFTER_FIRST_TURN
        return status

    def is_valid(self, rules: Rules | None = None) -> bool:
        return self.status(rules) == Status.VALID

    def validate(self, rules: Rules | None = None) -> Position:
        """Return self, or raise InvalidPositionError naming the first problem."""
        status = self.status(rules)
        for flag, text in _STATUS_TEXT.items():
            if status & flag:
                detail = (
                    f" (rules have {rules.houses})" if flag is Status.HOUSE_COUNT and rules else ""
                )
                raise InvalidPositionError(
                    f"invalid position {self.compact_or_repr()}: {text}{detail}"
                )
        return self

    # ----------------------------------------------------------------- compact notation

    def compact(self) -> str:
        """The canonical compact notation of this position (see the module docstring)."""
        side = ("s" if self.to_move is Side.SOUTH else "n") + ("p" if self.swap_available else "")
        return (
            f"{_houses(self.south)}-{self.stores[0]}-{_houses(self.north)}-{self.stores[1]}-{side}"
        )

    def compact_or_repr(self) -> str:
        try:
            return self.compact()
        except (IndexError, TypeError, ValueError):
            return repr(self)

    def __str__(self) -> str:
        return self.compact()

    @classmethod
    def parse(cls, text: str) -> Position:
        """A position from its compact notation; only the canonical spelling is accepted."""
        if not isinstance(text, str):
            raise InvalidNotationError(
                "a compact position must be a string", text=str(text), field="position"
            )
        if len(text) > MAX_NOTATION_LENGTH:
            raise InvalidNotationError(
                f"compact position longer than {MAX_NOTATION_LENGTH} characters",
                text=text[:80],
                field="position",
            )
        match = _COMPACT.fullmatch(text)
        if not match:
            raise InvalidNotationError(
                "not a compact position (expected like 444444-0-444444-0-s)",
                text=text,
                field="position",
            )
        south, south_store, north, north_store, side, pie = match.groups()
        position = cls(
            _parse_houses(south, text),
            _parse_houses(north, text),
            (int(south_store), int(north_store)),
            Side.SOUTH if side == "s" else Side.NORTH,
            pie == "p",
        )
        if position.compact() != text:  # e.g. "~0a" for a count below 62
            raise InvalidNotationError(
                "not the canonical spelling of a position", text=text, field="position"
            )
        return position.validate()

    # ----------------------------------------------------------------- JSON form

    def to_json(self) -> dict[str, Any]:
        return {
            "south": list(self.south),
            "north": list(self.north),
            "stores": list(self.stores),
            "to_move": self.to_move.value,
            "swap_available": self.swap_available,
        }

    @classmethod
    def from_json(cls, data: object) -> Position:
        """A position from the JSON form; raises InvalidPositionError naming the bad field."""
        if not isinstance(data, Mapping):
            raise InvalidPositionError("a position must be an object, a compact string or 'start'")
        fields = {"south", "north", "stores", "to_move", "swap_available"}
        unknown = sorted({str(key) for key in data} - fields)
        if unknown:
            raise InvalidPositionError(
                f"unknown field(s) {unknown}", field=f"position.{unknown[0]}"
            )
        south = _int_list(data, "south", None)
        north = _int_list(data, "north", None)
        stores = _int_list(data, "stores", 2) if "stores" in data else [0, 0]
        to_move = data.get("to_move", "south")
        if to_move not in ("south", "north"):
            raise InvalidPositionError(
                f"to_move must be 'south' or 'north', not {to_move!r}", field="position.to_move"
            )
        swap = data.get("swap_available", False)
        if not isinstance(swap, bool):
            raise InvalidPositionError(
                "swap_available must be true or false", field="position.swap_available"
            )
        return cls(
            tuple(south), tuple(north), (stores[0], stores[1]), Side(to_move), swap
        ).validate()


def parse_position(value: object, rules: Rules) -> Position:
    """A position given as ``"start"``, compact notation, JSON text or a JSON object, checked
    against ``rules``."""
    if isinstance(value, str):
        text = value.strip()
        if text == "start":
            return Position.start(rules)
        if text.startswith("{"):
            if len(text) > MAX_JSON_LENGTH:
                raise InvalidPositionError(
                    f"position JSON longer than {MAX_JSON_LENGTH} characters"
                )
            try:
                value = json.loads(text)
            except (ValueError, RecursionError) as error:  # JSONDecodeError, int digit limit
                raise InvalidPositionError(f"position is not valid JSON: {error}") from None
            return Position.from_json(value).validate(rules)
        return Position.parse(text).validate(rules)
    if isinstance(value, Position):
        return value.validate(rules)
    return Position.from_json(value).validate(rules)


def _houses(counts: Sequence[int]) -> str:
    return "".join(DIGITS[c] if c < 62 else "~" + DIGITS[c // 62] + DIGITS[c % 62] for c in counts)


def _parse_houses(text: str, whole: str) -> tuple[int, ...]:
    counts: list[int] = []
    i = 0
    while i < len(text):
        if text[i] == "~":
            pair = text[i + 1 : i + 3]
            if len(pair) != 2 or "~" in pair:
                raise InvalidNotationError(
                    "'~' must be followed by two base-62 digits", text=whole, field="position"
                )
            counts.append(_DIGIT_VALUE[pair[0]] * 62 + _DIGIT_VALUE[pair[1]])
            i += 3
        else:
            counts.append(_DIGIT_VALUE[text[i]])
            i += 1
    if not 1 <= len(counts) <= MAX_HOUSES:
        raise InvalidNotationError(
            f"a side must have 1..{MAX_HOUSES} houses", text=whole, field="position"
        )
    return tuple(counts)


def _int_list(data: Mapping[str, Any], name: str, length: int | None) -> list[int]:
    value = data.get(name)
    field = f"position.{name}"
    if not isinstance(value, list):
        raise InvalidPositionError(f"{name} must be a list of integers", field=field)
    if length is not None and len(value) != length:
        raise InvalidPositionError(f"{name} must have {length} entries", field=field)
    if length is None and not 1 <= len(value) <= MAX_HOUSES:
        raise InvalidPositionError(f"{name} must have 1..{MAX_HOUSES} houses", field=field)
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidPositionError(f"{name} must hold integers, not {v!r}", field=field)
        if not 0 <= v <= MAX_SEEDS:
            raise InvalidPositionError(f"{name} holds {v}: counts are 0..{MAX_SEEDS}", field=field)
    return value
