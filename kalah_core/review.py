"""Whole-game review: every sowing's value before and after, the seeds it lost against perfect
play, and a judgement; a summary per player.

Values are from the point of view of the player making the sowing (the mover), in seeds of
the final store difference. ``value_before`` is the value of the position before the sowing,
``value_after`` the value of the sowing played (the mover's value of the position it leads to:
the same player's value after an extra turn, minus the opponent's otherwise), and
``loss = value_before - value_after`` (never negative when both are exact). An entry is
``exact`` when both values are proven; otherwise both are the search's estimates and the
loss is an estimate too (clamped at 0).

The evaluation is a callable supplied by the caller that returns the engine's
:class:`~kalah_core.solver.Analysis` of a position (a local engine, or the service's cached
analysis path), so the CLI and the HTTP API review games identically.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .finnish import house_token, write_fi
from .game import Game, Move, MoveResult
from .position import Position, Side
from .results import Analysis
from .rules import Rules

JUDGEMENTS: tuple[tuple[int, str], ...] = (
    (6, "blunder"),
    (3, "mistake"),
    (1, "inaccuracy"),
    (0, "best"),
)
"""The judgement of a loss, in seeds: the first row whose threshold the loss reaches.
0 is ``best`` (a value-preserving sowing), 1-2 an ``inaccuracy``, 3-5 a ``mistake``, 6 or more
a ``blunder``. The one place these thresholds are defined (the API and the CLI document them
from here)."""

MARKS = {"best": "", "inaccuracy": "?!", "mistake": "?", "blunder": "??"}
"""Suffixes of an annotated sowing in the Finnish notation (chess-style)."""

JUDGEMENT_DOC = (
    "Judgement of a sowing by its loss in seeds against perfect play: best (0), inaccuracy "
    "(1-2), mistake (3-5), blunder (6 or more)."
)


_PLURALS = {
    "best": ("best sowing", "best sowings"),
    "inaccuracy": ("inaccuracy", "inaccuracies"),
    "mistake": ("mistake", "mistakes"),
    "blunder": ("blunder", "blunders"),
}


def count_text(count: int, judgement: str) -> str:
    """``count`` sowings of a ``judgement`` in words: "1 inaccuracy", "2 inaccuracies",
    "0 blunders"."""
    one, many = _PLURALS[judgement]
    return f"{count} {one if count == 1 else many}"


def judge(loss: int) -> str:
    for threshold, name in JUDGEMENTS:
        if loss >= threshold:
            return name
    return "best"


Evaluate = Callable[[Position], Analysis]
"""The analysis of a position: every legal move's value for the mover."""


@dataclass(frozen=True, slots=True)
class MoveReview:
    """The review of one sowing."""

    index: int
    mover: Side
    move: Move
    before: Position
    value_before: int
    value_after: int
    best_moves: tuple[Move, ...]
    loss: int
    exact: bool
    extra_turn: bool
    captured: int

    @property
    def judgement(self) -> str:
        return judge(self.loss)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "mover": self.mover.value,
            "move": self.move,
            "position": self.before.compact(),
            "value_before": self.value_before,
            "value_after": self.value_after,
            "best_moves": list(self.best_moves),
            "loss": self.loss,
            "judgement": self.judgement,
            "exact": self.exact,
            "extra_turn": self.extra_turn,
            "captured": self.captured,
        }


@dataclass(frozen=True, slots=True)
class Review:
    rules: Rules
    start: Position
    history: tuple[MoveResult, ...]
    entries: tuple[MoveReview, ...]

    @property
    def exact(self) -> bool:
        return all(e.exact for e in self.entries)

    def summary(self) -> dict[str, Any]:
        """Per player: sowings, total and average loss, counts per judgement, exactness."""
        result: dict[str, Any] = {}
        for side in Side:
            mine = [e for e in self.entries if e.mover is side]
            total = sum(e.loss for e in mine)
            counts = {name: 0 for _, name in reversed(JUDGEMENTS)}
            for entry in mine:
                counts[entry.judgement] += 1
            result[side.value] = {
                "sowings": len(mine),
                "total_loss": total,
                "average_loss": round(total / len(mine), 3) if mine else 0.0,
                "judgements": counts,
                "exact": all(e.exact for e in mine),
            }
        return result

    def annotated_fi(self) -> str:
        """The game in the Finnish notation with each sowing's judgement mark."""
        marks = [MARKS[e.judgement] for e in self.entries]
        plain = write_fi(self.history)
        return _annotate(plain, self.history, marks)

    def to_json(self) -> dict[str, Any]:
        final = self.history[-1].after if self.history else self.start
        return {
            "rules": self.rules.to_json(),
            "start": self.start.compact(),
            "game": write_fi(self.history),
            "annotated": self.annotated_fi(),
            "position": final.compact(),
            "exact": self.exact,
            "moves": [e.to_json() for e in self.entries],
            "summary": self.summary(),
        }


def review_moves(
    rules: Rules, start: Position, moves: Sequence[Move], evaluate: Evaluate
) -> Review:
    """Play ``moves`` from ``start`` (raising IllegalMoveError with the index in ``field``
    ``moves.<i>``) and review each sowing with ``evaluate``."""
    game = Game(rules, start)
    for index, move in enumerate(moves):
        try:
            game.push(move)
        except ValueError as error:
            error.field = f"moves.{index}"  # type: ignore[attr-defined]
            raise
    return review_history(rules, start, game.history, evaluate)


def review_fi(rules: Rules, text: str, evaluate: Evaluate, start: Position | None = None) -> Review:
    """Review a game written in the Finnish notation."""
    game = Game.parse_fi(text, rules, start)
    assert game.start is not None
    return review_history(rules, game.start, game.history, evaluate)


def review_history(
    rules: Rules, start: Position, history: Sequence[MoveResult], evaluate: Evaluate
) -> Review:
    entries: list[MoveReview] = []
    for index, result in enumerate(history):
        evaluation = evaluate(result.before)
        chosen = next(m for m in evaluation.moves if m.move == result.move)
        exact = evaluation.exact and chosen.exact
        loss = evaluation.value - chosen.value
        entries.append(
            MoveReview(
                index,
                result.mover,
                result.move,
                result.before,
                evaluation.value,
                chosen.value,
                tuple(evaluation.best_moves),
                loss if exact else max(loss, 0),
                exact,
                result.extra_turn,
                result.captured,
            )
        )
    return Review(rules, start, tuple(history), tuple(entries))


def _annotate(plain: str, history: Sequence[MoveResult], marks: Sequence[str]) -> str:
    """Insert ``marks`` after each sowing's token of ``plain`` (the canonical spelling, whose
    tokens appear in history order)."""
    out: list[str] = []
    pos = 0
    for result, mark in zip(history, marks, strict=True):
        token = f"{house_token(result.move)}{'*' if result.captured else ''}"
        at = plain.index(token, pos)
        out.append(plain[pos : at + len(token)] + mark)
        pos = at + len(token)
    out.append(plain[pos:])
    return "".join(out)


def evaluate_backwards(
    positions: Sequence[Position],
    total_ms: int,
    analyse: Callable[[Position, int], Analysis],
) -> dict[str, Analysis]:
    """Evaluate ``positions`` (keyed by compact notation) within ``total_ms`` of search in all:
    from the last to the first, each with an equal share of what is left. Late positions
    usually solve in milliseconds, so their unused time goes to the early, harder ones (and
    their transposition-table entries help them)."""
    unique = list(dict.fromkeys(p.compact() for p in positions))
    by_text = {p.compact(): p for p in positions}
    results: dict[str, Analysis] = {}
    deadline = time.perf_counter() + total_ms / 1000
    for left, text in zip(range(len(unique), 0, -1), reversed(unique), strict=True):
        remaining_ms = max(1.0, (deadline - time.perf_counter()) * 1000)
        results[text] = analyse(by_text[text], max(1, int(remaining_ms / left)))
    return results
