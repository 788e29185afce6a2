"""The games as the agent followed them: a game's record in the agent's frame (it plays
South), the key of a position it moved in, and the run's summary."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import KalahError
from ..game import Game
from ..position import Position
from ..rules import Rules


def legal_houses(position: Position) -> list[int]:
    """South's legal moves, counted without the engine (a guard before every send)."""
    return [i + 1 for i, seeds in enumerate(position.south) if seeds > 0]


def mirrored(position: Position) -> Position:
    return Position(position.north, position.south, position.stores[::-1], position.to_move.other)


@dataclass
class GameRecord:
    """One game as the agent followed it, in its own frame (it plays South)."""

    number: int
    rules: Rules
    start: Position
    """The position the game started from, in the server's frame (South moves first)."""
    we_south: bool
    moves: list[int] = field(default_factory=list)
    last: Position | None = None
    """The last state the agent was sent, and the move it made there."""
    last_move: int | None = None
    margin: int | None = None
    """The final store difference for the agent, when the agent saw the end."""
    lower: int | None = None
    upper: int | None = None
    """Proven bounds on the final margin from the agent's last analysis."""
    estimate: int | None = None
    """The agent's value of its last move (proven or estimated)."""
    decisions: list[tuple[PositionKey, int]] = field(default_factory=list)
    """Each state the agent was sent (its houses and stores) and the move it played there."""

    @property
    def result(self) -> str:
        if self.margin is not None:
            return "win" if self.margin > 0 else "loss" if self.margin < 0 else "draw"
        if self.lower is not None and self.lower > 0:
            return "win"
        return "unknown"

    def notation(self) -> str:
        game = Game(self.rules, self.start)
        try:
            for move in self.moves:
                game.push(move)
        except KalahError as error:  # a record the engine cannot replay: its raw moves
            return f"{' '.join(map(str, self.moves))} ({error})"
        return game.fi()


PositionKey = tuple[tuple[int, ...], tuple[int, ...], tuple[int, int]]


def position_key(position: Position) -> PositionKey:
    return (position.south, position.north, position.stores)


@dataclass
class Summary:
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    unknown: int = 0
    margins: list[int] = field(default_factory=list)

    def add(self, record: GameRecord) -> None:
        self.games += 1
        result = record.result
        if result == "win":
            self.wins += 1
        elif result == "draw":
            self.draws += 1
        elif result == "loss":
            self.losses += 1
        else:
            self.unknown += 1
        if record.margin is not None:
            self.margins.append(record.margin)

    @property
    def mean_margin(self) -> float | None:
        return sum(self.margins) / len(self.margins) if self.margins else None

    def text(self) -> str:
        mean = self.mean_margin
        return (
            f"games {self.games}: {self.wins} won, {self.draws} drawn, {self.losses} lost, "
            f"{self.unknown} ended out of sight unproven; mean margin "
            + ("n/a" if mean is None else f"{mean:+.2f}")
            + f" over the {len(self.margins)} games whose end the agent saw"
        )
