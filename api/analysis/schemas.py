"""Requests and answers of ``/v1/analysis`` and ``/v1/best-move``."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS, PRESETS

from ..config import MAX_DEPTH
from ..schemas import (
    POSITION_PATTERN,
    BoardSchema,
    RulesOptionsSchema,
    answer,
    move_field,
    position_field,
    rules_field,
)

TIME_DOC = (
    "Search time budget in milliseconds; default KALAH_DEFAULT_TIME_MS, at most KALAH_MAX_TIME_MS "
    "(see GET /v1/rules for this server's values; above it is a 422)."
)
DEPTH_DOC = (
    f"Search only this many sowings deep (a heuristic value unless proven); at most {MAX_DEPTH}."
)
NODES_DOC = "Node budget of the search; at most KALAH_MAX_NODES."


class LimitsSchema(ma.Schema):
    # strict: a JSON 5.5 or 1e308 is not an integer (a query's text "5" still is, below)
    time_ms = fields.Integer(
        strict=True, validate=validate.Range(min=1), metadata={"description": TIME_DOC}
    )
    # The maximum is documented here and checked by Limits.checked (a limit-exceeded problem
    # with its max, like the other budgets), not by marshmallow.
    depth = fields.Integer(
        strict=True,
        validate=validate.Range(min=1),
        metadata={"description": DEPTH_DOC, "maximum": MAX_DEPTH},
    )
    nodes = fields.Integer(
        strict=True, validate=validate.Range(min=1), metadata={"description": NODES_DOC}
    )


class AnalysisRequestSchema(ma.Schema):
    position = position_field(required=True)
    rules = rules_field()
    limits = fields.Nested(
        LimitsSchema,
        load_default=dict,
        metadata={
            "description": "Search budgets; an exact result already known is answered whatever "
            "they are."
        },
    )


class _QueryBase(ma.Schema):
    position = fields.String(
        required=True,
        validate=validate.Length(min=1, max=1024),
        metadata={
            "description": "'start' or the compact notation, e.g. 444444-0-444444-0-s.",
            "pattern": POSITION_PATTERN,
        },
    )
    rules = fields.String(
        load_default="kalah",
        validate=validate.OneOf(list(PRESETS)),
        metadata={
            "description": "The preset whose options the other rule parameters override; default "
            "kalah."
        },
    )
    # The range is documented but checked by the core, whose errors name the rule option.
    houses = fields.Integer(
        metadata={
            "description": f"Override: houses per side, 1..{MAX_HOUSES}.",
            "minimum": 1,
            "maximum": MAX_HOUSES,
        }
    )
    seeds = fields.Integer(
        metadata={
            "description": f"Override: seeds per house at the start, 1..{MAX_START_SEEDS}.",
            "minimum": 1,
            "maximum": MAX_START_SEEDS,
        }
    )
    capture = fields.String(
        validate=validate.OneOf(["nonempty", "always"]),
        metadata={"description": "Override: the capture rule."},
    )
    end = fields.String(
        validate=validate.OneOf(["either-side-empty", "mover-empty"]),
        metadata={"description": "Override: when the game ends."},
    )
    remaining = fields.String(
        validate=validate.OneOf(["owner", "empty-side"]),
        metadata={"description": "Override: where seeds left in houses go at the end."},
    )
    majority = fields.Boolean(
        metadata={"description": "Override: a store above half of all seeds ends the game."}
    )
    pie = fields.Boolean(metadata={"description": "Override: the pie (swap) rule."})


RULE_PARAMETERS = ("houses", "seeds", "capture", "end", "remaining", "majority", "pie")


class AnalysisQuerySchema(_QueryBase):
    time_ms = fields.Integer(validate=validate.Range(min=1), metadata={"description": TIME_DOC})
    depth = fields.Integer(
        validate=validate.Range(min=1), metadata={"description": DEPTH_DOC, "maximum": MAX_DEPTH}
    )
    nodes = fields.Integer(validate=validate.Range(min=1), metadata={"description": NODES_DOC})


class BestMoveQuerySchema(_QueryBase):
    time_ms = fields.Integer(validate=validate.Range(min=1), metadata={"description": TIME_DOC})


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
        metadata={"description": "Every optimal move (proven when exact, estimated otherwise)."},
    )
    moves = fields.List(
        fields.Nested(MoveValueSchema),
        metadata={
            "description": "Every legal move, best first (by value, then exactness, then house "
            "order)."
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
            "description": "When the answer came from the opening book (exact at once, no "
            "search): the book's `depth` in sowings and the `rules` key of its section; "
            "null otherwise."
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
