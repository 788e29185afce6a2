"""Moves played by the rules (``POST /v1/play``): the game from a position, every step and the
status at the end. :func:`replay` is shared with the game review."""

from __future__ import annotations

from collections.abc import Sequence

from kalah_core.finnish import write_fi
from kalah_core.game import Game, legal_moves, outcome
from kalah_core.moves import Move
from kalah_core.position import Position
from kalah_core.rules import Rules

from .problems import renamed_field
from .request import parse_position_field, parse_rules


def replay(
    rules: Rules, start: Position, *, game: str | None, moves: Sequence[Move] | None
) -> Game:
    """The game played from ``start``; errors name ``game`` or ``moves.<i>``."""
    played = Game(rules, start)
    if game is not None:
        with renamed_field(lambda _field: "game"):
            played.push_fi(game)
    for index, move in enumerate(moves or ()):
        with renamed_field(lambda _field, i=index: f"moves.{i}"):  # type: ignore[misc]  # mypy infers no lambda with a default
            played.push(move)
    return played


def play(
    rules_in: object,
    position_in: object = "start",
    *,
    game: str | None = None,
    moves: Sequence[Move] | None = None,
) -> dict[str, object]:
    """The answer of ``POST /v1/play``: each step with the events of its sowing, the final
    position and the game status (the schema ``PlayAnswer``)."""
    rules = parse_rules(rules_in)
    start = parse_position_field(position_in, rules)
    played = replay(rules, start, game=game, moves=moves)
    final = played.position
    result = outcome(final, rules)
    winner = None
    if result is not None:
        winner = result.winner.value if result.winner is not None else "draw"
    return {
        "rules": rules.to_json(),
        "start": start.compact(),
        "steps": [
            {
                "move": r.move,
                "mover": r.mover.value,
                "extra_turn": r.extra_turn,
                "captured": r.captured,
                "over": r.over,
                "position": r.after.compact(),
                "board": r.after.to_json(),
            }
            for r in played.history
        ],
        "position": final.compact(),
        "board": final.to_json(),
        "status": {
            "over": result is not None,
            "to_move": final.to_move.value,
            "legal_moves": legal_moves(final, rules),
            "score": None
            if result is None
            else {"south": result.score[0], "north": result.score[1]},
            "winner": winner,
        },
        "game": write_fi(played.history),
    }
