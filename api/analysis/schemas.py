"""Requests and answers of ``/v1/analysis`` and ``/v1/best-move``."""

from __future__ import annotations

from typing import Required, TypedDict

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.moves import Move

from ..base.config import MAX_DEPTH
from ..schemas.answers import BoardSchema, RulesOptionsSchema
from ..schemas.fields import JsonValue, answer, move_field, position_field, rules_field
from ..schemas.requests import (
    DEPTH_DOC,
    NODES_DOC,
    TIME_DOC,
    LimitsArgs,
    LimitsSchema,
    PositionQuery,
    PositionQuerySchema,
)

MOVES_DOC = (
    "Only these moves of the position (as chess engines' searchmoves): the value is the "
    "best of theirs and `moves` lists only them; each must be legal (a 422 naming the field "
    "otherwise)."
)


class AnalysisRequestSchema(ma.Schema):
    position = position_field(required=True)
    rules = rules_field()
    moves = fields.List(move_field(), metadata={"description": MOVES_DOC})
    limits = fields.Nested(
        LimitsSchema,
        load_default=dict,
        metadata={
            "description": "Search budgets; an exact result already known is answered whatever "
            "they are."
        },
    )


class AnalysisBody(TypedDict, total=False):
    """What :class:`AnalysisRequestSchema` loads (JSON types checked; the request type checks
    the values)."""

    position: Required[JsonValue]
    rules: Required[JsonValue]
    moves: list[Move]
    limits: Required[LimitsArgs]


class AnalysisQuerySchema(PositionQuerySchema):
    time_ms = fields.Integer(metadata={"description": TIME_DOC, "minimum": 1})
    moves = fields.String(
        metadata={"description": MOVES_DOC + " Comma-separated: `moves=1,4` or `moves=swap`."}
    )
    depth = fields.Integer(metadata={"description": DEPTH_DOC, "minimum": 1, "maximum": MAX_DEPTH})
    nodes = fields.Integer(metadata={"description": NODES_DOC, "minimum": 1})


class AnalysisQuery(PositionQuery, total=False):
    """What :class:`AnalysisQuerySchema` loads."""

    time_ms: int
    moves: str
    depth: int
    nodes: int


class BestMoveQuerySchema(PositionQuerySchema):
    time_ms = fields.Integer(metadata={"description": TIME_DOC, "minimum": 1})


class BestMoveQuery(PositionQuery, total=False):
    """What :class:`BestMoveQuerySchema` loads."""

    time_ms: int


@answer()
class EffectiveLimitsSchema(ma.Schema):
    time_ms = fields.Integer(
        metadata={"description": "The time budget the search ran (or would run) with."}
    )
    depth = fields.Integer(
        allow_none=True, metadata={"description": "The depth limit, null for none."}
    )
    nodes = fields.Integer(
        allow_none=True, metadata={"description": "The node budget, null for none."}
    )


@answer()
class MoveValueSchema(ma.Schema):
    move = move_field()
    value = fields.Integer(
        metadata={
            "description": "The value after this move, from the same mover's point of view as "
            "the root value."
        }
    )
    exact = fields.Boolean(metadata={"description": "Whether this move's value is proven."})
    lower = fields.Integer(
        metadata={"description": "Proven lower bound of the move's value (= value when exact)."}
    )
    upper = fields.Integer(
        metadata={"description": "Proven upper bound of the move's value (= value when exact)."}
    )
    extra_turn = fields.Boolean(
        metadata={"description": "Whether the move ends in the mover's store (moves again)."}
    )
    captured = fields.Integer(
        metadata={
            "description": "Seeds the capture put in the store, the capturing seed included; 0 "
            "if none."
        }
    )
    position = fields.String(metadata={"description": "The resulting position, compact notation."})


@answer()
class AnalysisSchema(ma.Schema):
    """An analysis: the value, its exactness and bounds, every legal move's value, the PV."""

    cached = fields.Boolean(metadata={"description": "Whether the answer came from the cache."})
    position = fields.String(
        metadata={"description": "The analysed position, canonical compact notation."}
    )
    board = fields.Nested(
        BoardSchema, metadata={"description": "The analysed position, JSON form."}
    )
    rules = fields.Nested(
        RulesOptionsSchema, metadata={"description": "The rules, every option normalized."}
    )
    perspective = fields.String(
        validate=validate.OneOf(["side_to_move"]),
        metadata={
            "description": "Values are from the point of view of the side to move: always "
            "side_to_move."
        },
    )
    to_move = fields.String(metadata={"description": "The side to move: south or north."})
    value = fields.Integer(
        metadata={
            "description": "Final store difference (side to move minus opponent) under perfect "
            "play, "
            "seeds already stored included; a heuristic estimate when not exact."
        }
    )
    exact = fields.Boolean(metadata={"description": "Whether value is proven."})
    lower = fields.Integer(
        metadata={"description": "Proven lower bound of the true value (= value when exact)."}
    )
    upper = fields.Integer(
        metadata={"description": "Proven upper bound of the true value (= value when exact)."}
    )
    best_moves = fields.List(
        move_field(),
        metadata={
            "description": "Every optimal move: proven when exact; for an estimate, every move "
            "whose estimate equals the best one's (estimates are whole seeds), best first."
        },
    )
    moves = fields.List(
        fields.Nested(MoveValueSchema),
        metadata={
            "description": "Every legal move, best first (by value, then exactness, then the "
            "higher proven lower bound, then house order)."
        },
    )
    pv = fields.List(
        fields.List(move_field()),
        metadata={
            "description": "A principal variation grouped by turns (a turn is a chain of "
            "extra-turn sowings)."
        },
    )
    depth = fields.Integer(
        allow_none=True,
        metadata={"description": "Depth in sowings of the heuristic search; null when exact."},
    )
    nodes = fields.Integer(metadata={"description": "Nodes searched to compute the answer."})
    time_ms = fields.Float(metadata={"description": "Search time in milliseconds when computed."})
    over = fields.Boolean(
        metadata={"description": "Whether the game is over in this position (no moves)."}
    )
    limits = fields.Nested(
        EffectiveLimitsSchema,
        metadata={
            "description": "The limits of the search that computed this answer (an exact answer "
            "is served to requests with any limits)."
        },
    )
    engine = fields.String(metadata={"description": "The engine version that computed the answer."})
    book = fields.Dict(
        allow_none=True,
        metadata={
            "description": "When the answer came from a book, at once with no search: the "
            "opening book (exact) gives its `depth` in sowings and the `rules` key of its "
            'section; the deep book of the 6-seed openings gives `kind` "deep", the `depth` '
            "of its estimate (null when proven), the `sowings` it covers and its `rules` key "
            "(its answers are exact only where their proven bounds meet); null otherwise."
        },
    )


@answer()
class BestMoveAnswerSchema(ma.Schema):
    cached = fields.Boolean(metadata={"description": "Whether the answer came from the cache."})
    position = fields.String(metadata={"description": "The position, canonical compact notation."})
    perspective = fields.String(metadata={"description": "Always side_to_move."})
    best_move = fields.Raw(
        allow_none=True,
        metadata={
            "description": "One best move (the first of best_moves), null when the game is over.",
            "oneOf": [{"type": "integer"}, {"type": "string", "enum": ["swap"]}],
            "nullable": True,
        },
    )
    best_moves = fields.List(move_field(), metadata={"description": "Every optimal move."})
    value = fields.Integer(
        metadata={"description": "The value for the side to move (see /v1/analysis)."}
    )
    exact = fields.Boolean(metadata={"description": "Whether value is proven."})
    lower = fields.Integer(metadata={"description": "Proven lower bound of the value."})
    upper = fields.Integer(metadata={"description": "Proven upper bound of the value."})


@answer()
class SearchingSchema(ma.Schema):
    """The deepening a live analysis is searching."""

    depth = fields.Integer(metadata={"description": "Its depth in sowings."})
    moves = fields.Integer(
        metadata={
            "description": "Root moves it has searched; their `moves` values are of this depth "
            "already when it is deeper than the event's `depth`."
        }
    )


@answer()
class AnalysisProgressSchema(ma.Schema):
    """An event of a live analysis while its search runs (``Accept: text/event-stream`` or
    ``application/x-ndjson``): what the search has so far."""

    final = fields.Boolean(metadata={"description": "Always false: the search runs."})
    depth = fields.Integer(metadata={"description": "Sowings of the last complete deepening."})
    nodes = fields.Integer(metadata={"description": "Nodes searched so far."})
    time_ms = fields.Float(metadata={"description": "Milliseconds since the search started."})
    value = fields.Integer(metadata={"description": "The estimate so far, within the bounds."})
    exact = fields.Boolean(metadata={"description": "Whether the bounds have met."})
    lower = fields.Integer(metadata={"description": "The root's proven lower bound so far."})
    upper = fields.Integer(metadata={"description": "The root's proven upper bound so far."})
    moves = fields.List(
        fields.Nested(MoveValueSchema),
        metadata={"description": "Every legal move's estimate and proven bounds, best first."},
    )
    pv = fields.List(
        fields.List(move_field()),
        metadata={"description": "The line the search holds now, grouped by turns."},
    )
    source = fields.String(
        metadata={
            "description": 'Where the estimates of `depth` come from: "deep book" while a long '
            "search has not deepened past the deep book's record of the position (the first "
            'event of such a search is the record), else "search".',
            "enum": ["search", "deep book"],
        }
    )
    searching = fields.Nested(
        SearchingSchema,
        allow_none=True,
        metadata={"description": "The deepening underway; null between deepenings."},
    )


@answer("answer", "problem")
class AnalysisFinalSchema(ma.Schema):
    """The last event of a live analysis: the answer (or why there is none)."""

    final = fields.Boolean(metadata={"description": "Always true: the last event."})
    answer = fields.Nested(
        AnalysisSchema,
        metadata={
            "description": "The answer: exactly the one-shot answer's body for the same request."
        },
    )
    problem = fields.Dict(
        metadata={"description": "Instead of answer: the problem that stopped the search."}
    )
