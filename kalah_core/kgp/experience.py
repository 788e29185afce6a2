"""The results of the agent's earlier games, by the positions it moved in and its moves."""

from __future__ import annotations

from ..position import Position
from .records import GameRecord, PositionKey, position_key

MEMORY_DRAW = 1.0
MEMORY_LOSS = 3.0
"""What the results of earlier games take off a move's estimate where the agent played it
before and no game through it was won: MEMORY_DRAW if one was drawn, else MEMORY_LOSS (a move
through which a game was won is played again: see Experience)."""


class Experience:
    """The results of the agent's earlier games, by the positions it moved in and its moves.
    Many opponents play the same move in the same position every time; against them a move that
    won once wins again, and one that lost loses again. So where the agent has been before, a
    move through which a game was won is played again, whatever the estimates (the agent
    chooses its own later moves, so it can take that game's line again; a move that lost once
    and won once is a won move), unless another move is proven to win or this one is proven
    to lose (the result first: see :meth:`kalah_core.kgp.thinker.Candidate.key`); a move
    whose games were drawn or lost gets MEMORY_DRAW or MEMORY_LOSS taken off its estimate, so
    the agent leaves that line where another move is close. A game whose end the agent did not
    see counts by its last estimate's sign."""

    def __init__(self) -> None:
        self.seen: dict[PositionKey, dict[int, list[int]]] = {}

    def add(self, record: GameRecord) -> None:
        result = record.result
        if result == "unknown":
            if record.estimate is None:
                return
            result = "win" if record.estimate > 0 else "draw" if record.estimate == 0 else "loss"
        slot = ("win", "draw", "loss").index(result)
        for key, move in record.decisions:
            counts = self.seen.setdefault(key, {}).setdefault(move, [0, 0, 0])
            counts[slot] += 1

    def best(self, position: Position) -> dict[int, str]:
        """The best result a game reached through each move played in ``position``."""
        out: dict[int, str] = {}
        for move, (won, drawn, _lost) in self.seen.get(position_key(position), {}).items():
            out[move] = "win" if won else "draw" if drawn else "loss"
        return out
