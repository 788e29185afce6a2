"""A move and what it did: the vocabulary shared by the game, the notation and the search.

A move is a house number ``1..houses`` counted from the mover's own left, or ``"swap"``
(the pie rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .position import Position, Side

Move = int | Literal["swap"]
SWAP: Literal["swap"] = "swap"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The end of a game: final stores and the winner (None for a draw)."""

    score: tuple[int, int]

    @property
    def winner(self) -> Side | None:
        south, north = self.score
        return None if south == north else Side.SOUTH if south > north else Side.NORTH


@dataclass(frozen=True, slots=True)
class MoveResult:
    """What one move did. ``captured`` counts every seed the capture put in the store, the
    capturing seed included (so it is > 0 exactly when a capture happened)."""

    move: Move
    mover: Side
    before: Position
    after: Position
    extra_turn: bool
    captured: int
    over: bool

    @property
    def score(self) -> tuple[int, int] | None:
        return self.after.stores if self.over else None
