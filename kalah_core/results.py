"""What a search returns: every move's value and the analysis of a position.

Values are from the point of view of the player to move: the final store difference (mover's
store minus opponent's) under perfect play, seeds already stored included. A value is
``exact`` when proven; otherwise ``lower <= true value <= upper`` is proven and ``value`` is a
heuristic estimate from a depth-limited search (``depth`` sowings deep). The solver
(:mod:`kalah_core.solver`) and the book (:mod:`kalah_core.book`) both produce them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .moves import Move
from .position import Position

INFINITY = 1000
"""A bound beyond every value: no value exceeds the seeds of a position (MAX_SEEDS) either way.
The bounds of what nothing is proven about yet; the compiled search's own sentinel (``INF`` in
``_searchdefs.pxd``) is the same number, checked by tests/test_solver.py."""


@dataclass(frozen=True, slots=True)
class MoveValue:
    """One legal move and its value for the player making it (same perspective as the root)."""

    move: Move
    value: int
    exact: bool
    lower: int
    upper: int
    extra_turn: bool
    captured: int
    position: Position
    """The position the move leads to (its JSON: :func:`kalah_core.answer.move_value_json`)."""


@dataclass(frozen=True, slots=True)
class Analysis:
    """The result of a search. ``moves`` lists every legal move best first (by value, then
    exactness, then the higher proven lower bound, then house order); ``best_moves`` are all
    moves proven (or, when not exact, estimated) optimal; ``pv`` is a principal variation
    grouped by turns. ``depth`` is the depth in sowings of the heuristic search behind an
    inexact value, None when the value is exact."""

    value: int
    exact: bool
    lower: int
    upper: int
    best_moves: list[Move]
    moves: list[MoveValue]
    pv: list[list[Move]]
    depth: int | None
    nodes: int
    time_ms: float
    over: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An analysis while it runs (:meth:`kalah_core.solver.Engine.snapshot`): its last
    complete deepening (``depth`` sowings; 0 before the first), the nodes so far, the root's
    estimate and proven bounds, every root move's (best first; ``exact`` once its bounds meet)
    and a line the table holds, grouped by turns."""

    depth: int
    nodes: int
    value: int
    lower: int
    upper: int
    moves: list[MoveValue]
    pv: list[list[Move]]
    source: Literal["search", "deep book"] = "search"
    """Where the estimates of ``depth`` come from: the deep book's record while a long
    analysis has not deepened past it (:meth:`kalah_core.solver.Engine._from_book`), else the
    search."""
    searching: tuple[int, int] | None = None
    """(depth, root moves done) of the deepening underway: a move done is shown at that
    depth already when it is deeper than ``depth``."""
