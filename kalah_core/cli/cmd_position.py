"""``kalah show``, ``kalah moves`` and ``kalah replay``: look at a position, its legal moves,
and where a game in the Finnish notation ends."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..game import Game, legal_moves, outcome, play
from ..position import Position, Side
from ..rules import Rules
from .options import EXIT_OK, Commands, add_command, emit, rules_and_position


def add_commands(commands: Commands) -> None:
    """Register ``show``, ``moves`` and ``replay``."""
    add_command(commands, "show", cmd_show, "draw a position", position=True)
    add_command(
        commands, "moves", cmd_moves, "list the legal moves and what each does", position=True
    )

    replay = add_command(commands, "replay", cmd_replay, "replay a game in the Finnish notation")
    replay.add_argument(
        "game",
        metavar="GAME",
        help="the game, e.g. '45-46, 1*-5, 2-, -63*'; put '--' before a game that starts with '-'",
    )
    replay.add_argument(
        "--from",
        dest="start",
        metavar="POSITION",
        default=None,
        help="start here instead of the start position",
    )


def _score_json(score: tuple[int, int] | None) -> list[int] | None:
    return None if score is None else list(score)


def _score_text(score: tuple[int, int]) -> str:
    south, north = score
    verdict = "draw" if south == north else ("South" if south > north else "North") + " wins"
    return f"South {south}, North {north}: {verdict}"


def board_text(position: Position) -> str:
    """An ASCII board: North's houses on top as North sees them (house h..1 from left to
    right), South's houses 1..h below, North's store on the left, South's on the right."""
    h = position.houses
    width = max(3, *(len(str(c)) for c in (*position.south, *position.north)))
    left = len(str(position.stores[1]))
    pad = " " * (left + 1)
    rule = pad + "+" + "+".join("-" * (width + 2) for _ in range(h)) + "+"

    def labels(numbers: Sequence[int], name: str) -> str:
        return pad + " " + " ".join(f"{n:^{width + 2}}" for n in numbers) + "  " + name

    def row(counts: Sequence[int]) -> str:
        return pad + "|" + "|".join(f" {c:>{width}} " for c in counts) + "|"

    return "\n".join(
        [
            labels(range(h, 0, -1), "North"),
            rule,
            row(position.north[::-1]),
            f"{position.stores[1]} " + rule[left + 1 :] + f" {position.stores[0]}",
            row(position.south),
            rule,
            labels(range(1, h + 1), "South"),
        ]
    )


def position_summary(position: Position, rules: Rules) -> str:
    """The board, then the side to move or the final score."""
    lines = [board_text(position), f"position: {position.compact()}"]
    result = outcome(position, rules)
    if result is None:
        swap = (
            " (may answer 'swap')"
            if position.swap_available and position.to_move is Side.NORTH
            else ""
        )
        lines.append(f"{position.to_move.value.capitalize()} to move{swap}")
    else:
        lines.append(f"game over: {_score_text(result.score)}")
    return "\n".join(lines)


def cmd_show(args: argparse.Namespace) -> int:
    """Draw a position and say who is to move, or the score when the game is over."""
    rules, position = rules_and_position(args, args.position)
    result = outcome(position, rules)
    data = {
        "position": position.to_json(),
        "compact": position.compact(),
        "to_move": position.to_move.value,
        "over": result is not None,
        "score": _score_json(result.score if result else None),
        "rules": rules.to_json(),
    }
    emit(args, position_summary(position, rules), data)
    return EXIT_OK


def cmd_moves(args: argparse.Namespace) -> int:
    """List every legal move with the position it leads to and what it does."""
    rules, position = rules_and_position(args, args.position)
    results = [play(position, rules, move) for move in legal_moves(position, rules)]
    data = {
        "position": position.compact(),
        "moves": [
            {
                "move": r.move,
                "position": r.after.compact(),
                "extra_turn": r.extra_turn,
                "captured": r.captured,
                "over": r.over,
                "score": _score_json(r.score),
            }
            for r in results
        ],
    }
    if not results:
        text = f"no legal moves in {position.compact()}: the game is over"
    else:
        width = max(len(r.after.compact()) for r in results)
        header = f"{'move':<5} {'position':<{width}}  extra  captured  over"
        rows = [
            f"{r.move!s:<5} {r.after.compact():<{width}}  {'yes' if r.extra_turn else 'no':<5}  "
            f"{r.captured:<8}  {'no' if r.score is None else _score_text(r.score)}"
            for r in results
        ]
        text = "\n".join(
            [
                f"{position.to_move.value.capitalize()} to move in {position.compact()}",
                header,
                *rows,
            ]
        )
    emit(args, text, data)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a game in the Finnish notation and print where it ends."""
    rules, start = rules_and_position(args, args.start)
    game = Game.parse_fi(args.game, rules, start)
    result = game.outcome()
    score = result.score if result else None
    data = {
        "position": game.position.to_json(),
        "over": result is not None,
        "score": _score_json(score),
    }
    text = "\n".join([f"moves: {game.fi()}", position_summary(game.position, rules)])
    emit(args, text, data)
    return EXIT_OK
