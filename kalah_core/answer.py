"""The JSON form of an analysis: one shape for ``POST /v1/analysis``, ``kalah solve --json``,
``kalah analyse --json`` and every batch line, and its inverse.

Positions are written in the compact notation (the JSON form of the analysed position is in
``board``); values are from the point of view of the side to move; ``moves`` lists every
legal move best first, each with its own exactness and proven bounds. ``limits`` are the
budgets the search ran with (``null`` where unbounded) and ``engine`` the engine version,
which changes whenever an answer could; ``book`` says when the answer came from the opening
book (its depth and section), ``null`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .position import Position
from .results import Analysis, MoveValue
from .rules import Rules
from .solver import ENGINE_VERSION, Snapshot

PERSPECTIVE = "side_to_move"


def analysis_json(
    position: Position,
    rules: Rules,
    analysis: Analysis,
    limits: Mapping[str, int | None] | None = None,
) -> dict[str, Any]:
    """The analysis of ``position`` under ``rules`` as a JSON object (see the module)."""
    return {
        "position": position.compact(),
        "board": position.to_json(),
        "rules": rules.to_json(),
        "perspective": PERSPECTIVE,
        "to_move": position.to_move.value,
        "value": analysis.value,
        "exact": analysis.exact,
        "lower": analysis.lower,
        "upper": analysis.upper,
        "best_moves": list(analysis.best_moves),
        "moves": [move_value_json(m) for m in analysis.moves],
        "pv": [list(turn) for turn in analysis.pv],
        "depth": analysis.depth,
        "nodes": analysis.nodes,
        "time_ms": round(analysis.time_ms, 3),
        "over": analysis.over,
        "limits": {name: (limits or {}).get(name) for name in ("time_ms", "depth", "nodes")},
        "engine": ENGINE_VERSION,
        "book": analysis.extra.get("book"),
    }


def snapshot_json(snapshot: Snapshot, time_ms: float) -> dict[str, Any]:
    """One event of a live analysis (the API's streams, ``kalah analyse --json --watch``):
    ``final`` false, the depth of the last complete deepening, the nodes and the time so far,
    the root's estimate and proven bounds, every move as in an answer, the line the table
    holds, where the estimates come from and the deepening underway."""
    return {
        "final": False,
        "depth": snapshot.depth,
        "nodes": snapshot.nodes,
        "time_ms": round(time_ms, 1),
        "value": snapshot.value,
        "exact": snapshot.lower == snapshot.upper,
        "lower": snapshot.lower,
        "upper": snapshot.upper,
        "moves": [move_value_json(m) for m in snapshot.moves],
        "pv": [list(turn) for turn in snapshot.pv],
        "source": snapshot.source,
        "searching": None
        if snapshot.searching is None
        else {"depth": snapshot.searching[0], "moves": snapshot.searching[1]},
    }


def move_value_json(move: MoveValue) -> dict[str, Any]:
    """One legal move's value, bounds and effect; the position it leads to, compact."""
    return {
        "move": move.move,
        "value": move.value,
        "exact": move.exact,
        "lower": move.lower,
        "upper": move.upper,
        "extra_turn": move.extra_turn,
        "captured": move.captured,
        "position": move.position.compact(),
    }


def analysis_from_json(data: Mapping[str, Any]) -> Analysis:
    """The :class:`Analysis` an answer of :func:`analysis_json` was made from (for callers
    that hold the JSON, such as the service's cache, and need the engine's objects)."""
    return Analysis(
        value=data["value"],
        exact=data["exact"],
        lower=data["lower"],
        upper=data["upper"],
        best_moves=list(data["best_moves"]),
        moves=[
            MoveValue(
                m["move"],
                m["value"],
                m["exact"],
                m["lower"],
                m["upper"],
                m["extra_turn"],
                m["captured"],
                Position.parse(m["position"]),
            )
            for m in data["moves"]
        ],
        pv=[list(turn) for turn in data["pv"]],
        depth=data["depth"],
        nodes=data["nodes"],
        time_ms=data["time_ms"],
        over=data["over"],
        extra={"book": data["book"]} if data.get("book") else {},
    )
