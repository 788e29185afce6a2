"""Following the games through the states the server sends (see :mod:`kalah_core.kgp.agent`):
the moves between two states, found by a short search, and where a game starts and ends."""

from __future__ import annotations

from collections.abc import Callable

from ..game import legal_moves, play
from ..position import Position, Side
from ..rules import Rules
from .records import GameRecord, legal_houses, position_key

BRIDGE_NODES = 200_000
"""The most positions searched to find the moves between two states."""


def bridge(
    before: Position, after: Position, rules: Rules, ours: list[int], limit: int = BRIDGE_NODES
) -> list[int] | None:
    """The moves from ``before`` (South to move, playing one of ``ours``; North to move when
    ``ours`` is empty) to ``after`` (South to move with a choice): North's moves, and South's
    moves where South had one only (the server plays those without asking). None if none is
    found within ``limit`` positions."""
    budget = [limit]
    target = (after.south, after.north, after.stores)

    def search(node: Position, path: list[int], first: bool) -> list[int] | None:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        if node.stores[0] > after.stores[0] or node.stores[1] > after.stores[1]:
            return None
        moves = legal_moves(node, rules)
        if not moves:
            return None
        if node.to_move is Side.SOUTH:
            if first:
                moves = [m for m in ours if m in moves]
            elif (node.south, node.north, node.stores) == target:
                return path
            elif len(moves) > 1:
                return None
        for move in moves:
            if isinstance(move, int):
                found = search(play(node, rules, move).after, [*path, move], False)
                if found is not None:
                    return found
        return None

    start = before if ours else Position(before.south, before.north, before.stores, Side.NORTH)
    return search(start, [], bool(ours))


class Tracker:
    """Follows the games through the states the server sends (see the module docstring)."""

    def __init__(self, on_end: Callable[[GameRecord], None]) -> None:
        self.game: GameRecord | None = None
        self.count = 0
        self._on_end = on_end
        self.reconnected = False
        """Set on a new connection: a first state equal to the last one is that state again."""

    def observe(self, state: Position, rules: Rules) -> bool:
        """Take in a new state; True when it starts a new game."""
        game = self.game
        resent, self.reconnected = self.reconnected, False
        if game is not None and game.last is not None and game.rules == rules:
            if resent and (state.south, state.north, state.stores) == (
                game.last.south,
                game.last.north,
                game.last.stores,
            ):
                game.last_move = None
                return False  # the state sent again after a reconnection
            ours = [game.last_move] if game.last_move is not None else []
            path = bridge(game.last, state, rules, ours) if ours else None
            if path is None:  # a different move of ours reached the server (or none)
                others = [m for m in legal_houses(game.last) if m not in ours]
                path = bridge(game.last, state, rules, others)
            if path is not None:
                game.moves.extend(path)
                game.last, game.last_move = state, None
                return False
        if game is not None:
            self.finish()
        seeds = (state.total_seeds // (2 * state.houses),) * state.houses
        start = Position(seeds, seeds)  # the server's start, whatever Rules.seeds can hold
        we_south = True
        moves: list[int] = []
        if (state.south, state.north, state.stores) != (start.south, start.north, start.stores):
            path = bridge(start, state, rules, [])
            if path is not None:
                we_south = False
                moves = path
            else:  # joined in the middle: the record starts here
                start = state
        self.count += 1
        self.game = GameRecord(self.count, rules, start, we_south, moves, state)
        return True

    def played(
        self, move: int, lower: int | None, upper: int | None, estimate: int | None = None
    ) -> None:
        """The agent's final move for the last state (its proven bounds, its value). The next
        state's bridge starts with it; a move that ends the game ends the record."""
        game = self.game
        if game is None or game.last is None:
            return
        game.last_move, game.lower, game.upper = move, lower, upper
        game.estimate = estimate
        game.decisions.append((position_key(game.last), move))
        result = play(game.last, game.rules, move)
        if result.over:
            game.moves.append(move)
            south, north = result.after.stores
            game.margin = south - north
            game.last_move = None
            self.finish()

    def finish(self) -> GameRecord | None:
        """End the current record (its end out of sight unless its margin is known)."""
        game, self.game = self.game, None
        if game is not None:
            if game.last_move is not None:  # the server played it; what followed is unseen
                game.moves.append(game.last_move)
            self._on_end(game)
        return game
