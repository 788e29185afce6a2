"""Legal moves, playing them, the end of the game, and a game with a move stack.

A move is a house number ``1..houses`` counted from the mover's own left, or ``"swap"``
(the pie rule). The work is done by the compiled move generator: ``_board`` for positions
of at most 8 houses and 255 seeds, ``_bigboard`` for bigger ones (see :func:`board_module`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType

from . import _bigboard, _board
from .errors import IllegalMoveError
from .finnish import parse_fi, write_fi
from .moves import SWAP, Move, MoveResult, Outcome
from .position import Position, Side
from .rules import Rules

__all__ = ["SWAP", "Game", "Move", "MoveResult", "Outcome"]


def board_module(position: Position) -> ModuleType:
    """The compiled move generator for ``position``: the one-word board when it fits (at most
    8 houses and 255 seeds), else the big board (up to 12 houses and 600 seeds)."""
    if (
        position.houses <= _board.BOARD_MAX_HOUSES
        and position.total_seeds <= _board.BOARD_MAX_SEEDS
    ):
        return _board
    return _bigboard


def legal_moves(position: Position, rules: Rules) -> list[Move]:
    """The legal moves, houses in order then ``"swap"``; empty when the game is over."""
    return [_from_code(code) for code in board_module(position).legal_moves(position, rules)]


def is_over(position: Position, rules: Rules) -> bool:
    return bool(board_module(position).is_game_over(position, rules))


def outcome(position: Position, rules: Rules) -> Outcome | None:
    """The final score if the game is over in ``position``, else None."""
    board = board_module(position)
    if not board.is_game_over(position, rules):
        return None
    return Outcome(board.final_stores(position, rules))


def play(position: Position, rules: Rules, move: Move) -> MoveResult:
    """Play ``move``; raises IllegalMoveError saying why it is not legal."""
    code = _to_code(position, rules, move)
    after, extra, captured, over = board_module(position).play_move(position, rules, code)
    return MoveResult(_from_code(code), position.to_move, position, after, extra, captured, over)


def group_turns(line: Sequence[MoveResult]) -> list[list[Move]]:
    """The moves of ``line`` grouped by turns: a turn goes on while its mover keeps the move
    (extra turns); a swap is a turn of its own."""
    turns: list[list[Move]] = []
    for i, result in enumerate(line):
        if i == 0 or result.mover is not line[i - 1].mover or result.move == SWAP:
            turns.append([])
        turns[-1].append(result.move)
    return turns


def perft(position: Position, rules: Rules, depth: int) -> int:
    """Number of move sequences (sowings or swaps) of exactly ``depth`` moves from
    ``position``; a game that ends sooner counts nothing (as in chess perft). 1 at depth 0."""
    return int(board_module(position).perft(position, rules, depth))


def _to_code(position: Position, rules: Rules, move: object) -> int:
    if is_over(position, rules):
        raise IllegalMoveError("the game is over", move=move, position=position)
    if move == SWAP:
        if not rules.pie:
            raise IllegalMoveError("the rules have no pie rule", move=move, position=position)
        if position.to_move is not Side.NORTH or not position.swap_available:
            raise IllegalMoveError(
                "swap is only legal at North's first turn", move=move, position=position
            )
        return int(_board.SWAP_CODE)
    if isinstance(move, bool) or not isinstance(move, int):
        raise IllegalMoveError("a move is a house number or 'swap'", move=move, position=position)
    if not 1 <= move <= rules.houses:
        raise IllegalMoveError(
            f"houses are numbered 1..{rules.houses}", move=move, position=position
        )
    if position.side(position.to_move)[move - 1] == 0:
        raise IllegalMoveError(f"house {move} is empty", move=move, position=position)
    return move - 1


def _from_code(code: int) -> Move:
    return SWAP if code == _board.SWAP_CODE else code + 1


@dataclass
class Game:
    """A game under fixed rules: a start position and a stack of played moves."""

    rules: Rules = field(default_factory=Rules)
    start: Position | None = None
    history: list[MoveResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.start is None:
            self.start = Position.start(self.rules)
        self.start.validate(self.rules)

    @property
    def position(self) -> Position:
        if self.history:
            return self.history[-1].after
        assert self.start is not None
        return self.start

    def legal_moves(self) -> list[Move]:
        return legal_moves(self.position, self.rules)

    def push(self, move: Move) -> MoveResult:
        result = play(self.position, self.rules, move)
        self.history.append(result)
        return result

    def pop(self) -> MoveResult:
        return self.history.pop()

    def outcome(self) -> Outcome | None:
        return outcome(self.position, self.rules)

    @property
    def moves(self) -> list[Move]:
        return [r.move for r in self.history]

    def fi(self) -> str:
        """The game in the Finnish notation (canonical spelling, ``*`` on every capture)."""
        return write_fi(self.history)

    def push_fi(self, text: str) -> list[MoveResult]:
        """Play a game fragment written in the Finnish notation; an IllegalMoveError names
        the sowing (round, side, move) and why it cannot be played."""

        results: list[MoveResult] = []
        turns = parse_fi(text)
        for t, turn in enumerate(turns):
            for i, sowing in enumerate(turn):
                where = f"round {sowing.round}, {sowing.side.value} sowing {sowing.move!r}"
                position = self.position
                if self.outcome() is not None:
                    raise IllegalMoveError(
                        f"{where}: the game is already over", move=sowing.move, position=position
                    )
                if position.to_move is not sowing.side:
                    raise IllegalMoveError(
                        f"{where}: it is {position.to_move.value}'s turn",
                        move=sowing.move,
                        position=position,
                    )
                try:
                    result = self.push(sowing.move)
                except IllegalMoveError as error:
                    raise IllegalMoveError(
                        f"{where}: {error.reason}", move=sowing.move, position=position
                    ) from None
                if sowing.starred and not result.captured:
                    self.pop()
                    raise IllegalMoveError(
                        f"{where}: marked '*' but captures nothing",
                        move=sowing.move,
                        position=position,
                    )
                results.append(result)
                last_of_text = t == len(turns) - 1 and i == len(turn) - 1
                if i < len(turn) - 1 and not result.extra_turn and not result.over:
                    raise IllegalMoveError(
                        f"{where}: does not end in the store, so the turn passes "
                        "before the next sowing",
                        move=sowing.move,
                        position=position,
                    )
                ends_turn_early = result.extra_turn and not result.over and not last_of_text
                if i == len(turn) - 1 and ends_turn_early:
                    raise IllegalMoveError(
                        f"{where}: ends in the store, so the turn goes on; "
                        "write its next sowing with it",
                        move=sowing.move,
                        position=position,
                    )
        return results

    @classmethod
    def parse_fi(cls, text: str, rules: Rules, start: Position | None = None) -> Game:
        game = cls(rules, start)
        game.push_fi(text)
        return game
