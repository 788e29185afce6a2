"""The move notation of seed 000 (the Finnish article), e.g. ``(1-2, 5-31, 2-5, 3-2, 2*-1*)``.

Rounds are separated by commas; in a round South's turn stands left of ``-`` and North's
right of it, either may be blank. A turn is its sowings written together (house numbers
from the mover's own left), ``*`` after a sowing marks a capture. A reader accepts a missing
``*`` (the article omits one) and rejects a ``*`` on a sowing that captures nothing. We write
the pie swap as the word ``swap``. The canonical spelling fills every round it can, puts ``*``
on every capture, and has no parentheses.

The article's boards have 6 houses, so a sowing is one digit. On boards of 10 to 12 houses
houses 10, 11 and 12 are written ``a``, ``b`` and ``c`` (the digits of the compact position
notation), so that a turn's sowings still need no separator: ``3a*`` is house 3, then house 10
capturing. Houses 1 to 9 are written as before, so every game of up to 9 houses reads and
writes exactly as in the article.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import InvalidNotationError
from .moves import Move, MoveResult
from .position import DIGITS, Side
from .rules import MAX_HOUSES

MAX_GAME_LENGTH = 4096
_HOUSE_LETTERS = DIGITS[10 : MAX_HOUSES + 1]  # a, b, c: houses 10..12
_TOKEN = re.compile(rf"swap|[1-9{_HOUSE_LETTERS}]\*?")


@dataclass(frozen=True, slots=True)
class Sowing:
    """One written sowing: the move, its side, whether it carries ``*``, where it stands."""

    move: Move
    side: Side
    starred: bool
    round: int
    offset: int


def parse_fi(text: str) -> list[list[Sowing]]:
    """The turns written in ``text``, each a list of sowings by one side, in order."""
    if len(text) > MAX_GAME_LENGTH:
        raise InvalidNotationError(
            f"game longer than {MAX_GAME_LENGTH} characters", text=text[:80], field="game"
        )
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    turns: list[list[Sowing]] = []
    offset = text.find(body)
    for number, round_text in enumerate(body.split(","), start=1):
        halves = round_text.split("-")
        if len(halves) != 2:
            raise InvalidNotationError(
                f"round {number} must have exactly one '-'", text=text, field="game"
            )
        base = offset
        for side, half in zip((Side.SOUTH, Side.NORTH), halves, strict=True):
            turn = _parse_turn(half, side, number, base, text)
            if turn:
                turns.append(turn)
            base += len(half) + 1
        offset += len(round_text) + 1
    if not turns:
        raise InvalidNotationError("no sowing in the game", text=text, field="game")
    return turns


def _parse_turn(half: str, side: Side, number: int, base: int, text: str) -> list[Sowing]:
    stripped = half.strip()
    sowings: list[Sowing] = []
    pos = 0
    while pos < len(stripped):
        match = _TOKEN.match(stripped, pos)
        if not match:
            raise InvalidNotationError(
                f"unexpected {stripped[pos]!r} in round {number} (sowings are house numbers 1-9, "
                f"{_HOUSE_LETTERS[0]}-{_HOUSE_LETTERS[-1]} for houses 10-{MAX_HOUSES}, "
                "optionally followed by '*', or 'swap')",
                text=text,
                field="game",
            )
        token = match.group()
        move: Move = "swap" if token == "swap" else DIGITS.index(token[0])
        sowings.append(Sowing(move, side, token.endswith("*"), number, base + pos))
        pos = match.end()
    return sowings


def write_fi(history: Sequence[MoveResult]) -> str:
    """The canonical Finnish spelling of a sequence of moves."""
    rounds: list[list[str]] = []
    turn = ""
    for k, result in enumerate(history):
        turn += _token(result)
        ends_turn = not result.extra_turn or result.over or k == len(history) - 1
        if not ends_turn:
            continue
        if result.mover is Side.SOUTH or not rounds or rounds[-1][1]:
            rounds.append(["", ""])
        rounds[-1][0 if result.mover is Side.SOUTH else 1] = turn
        turn = ""
    return ", ".join(f"{south}-{north}" for south, north in rounds)


def house_token(move: Move) -> str:
    """How one sowing's house is written: ``1``..``9``, then ``a``, ``b``, ``c`` for 10..12."""
    return DIGITS[move] if isinstance(move, int) else move


def _token(result: MoveResult) -> str:
    return f"{house_token(result.move)}{'*' if result.captured else ''}"
