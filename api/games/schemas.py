"""Request and answer of ``POST /v1/games/analysis``."""

from __future__ import annotations

from typing import Required, TypedDict

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.finnish import MAX_GAME_LENGTH
from kalah_core.moves import Move
from kalah_core.review import JUDGEMENT_DOC

from ..base.config import MAX_DEPTH, MAX_MOVES
from ..schemas.answers import RulesOptionsSchema
from ..schemas.fields import JsonValue, answer, move_field, position_field, rules_field
from ..schemas.requests import DEPTH_DOC, NODES_DOC, LimitsArgs

GAME_TIME_DOC = (
    "Search budget for the whole game in milliseconds; default KALAH_DEFAULT_TIME_MS per "
    "sowing, at most KALAH_MAX_TIME_MS in all (a larger value is a 422), at least 5 per distinct "
    "position (a smaller value is a 422). A review still running after twice its budget and a "
    "second is stopped with a 503. Positions are analysed "
    "from the last to the first, each with an equal share of what is left, so the quick late "
    "positions leave their time to the early ones."
)


class GameLimitsSchema(ma.Schema):
    # strict, as in /v1/analysis: a JSON "50" or 5.5 is not an integer; the bounds are
    # checked by the request type (kalah_service.core.request.Limits.checked)
    time_ms = fields.Integer(strict=True, metadata={"description": GAME_TIME_DOC, "minimum": 1})
    depth = fields.Integer(
        strict=True,
        metadata={"description": DEPTH_DOC + " Per position.", "minimum": 1, "maximum": MAX_DEPTH},
    )
    nodes = fields.Integer(
        strict=True,
        metadata={"description": NODES_DOC + " Per position.", "minimum": 1},
    )


class GameRequestSchema(ma.Schema):
    rules = rules_field()
    game = fields.String(
        validate=validate.Length(min=1, max=MAX_GAME_LENGTH),
        metadata={
            "description": "The game in the Finnish notation, e.g. '45-46, 1*-5, 2-, -63*'; "
            "give this or moves."
        },
    )
    position = position_field(load_default="start")
    moves = fields.List(
        move_field(),
        validate=validate.Length(min=1, max=MAX_MOVES),
        metadata={
            "description": f"The sowings in order, houses or 'swap' (at most {MAX_MOVES}); give "
            "this or game."
        },
    )
    limits = fields.Nested(
        GameLimitsSchema, load_default=dict, metadata={"description": "Search budgets."}
    )

    @ma.validates_schema
    def _one_of(self, data: dict[str, object], **kwargs: object) -> None:
        if ("moves" in data) == ("game" in data):
            raise ma.ValidationError("give exactly one of moves and game", field_name="game")


class GameBody(TypedDict, total=False):
    """What :class:`GameRequestSchema` loads (its limits are the whole game's)."""

    rules: Required[JsonValue]
    game: str
    position: Required[JsonValue]
    moves: list[Move]
    limits: Required[LimitsArgs]


@answer()
class JudgementCountsSchema(ma.Schema):
    best = fields.Integer(metadata={"description": "Sowings that kept the value (loss 0)."})
    inaccuracy = fields.Integer(metadata={"description": "Sowings that lost 1-2 seeds."})
    mistake = fields.Integer(metadata={"description": "Sowings that lost 3-5 seeds."})
    blunder = fields.Integer(metadata={"description": "Sowings that lost 6 seeds or more."})


@answer()
class PlayerSummarySchema(ma.Schema):
    sowings = fields.Integer(metadata={"description": "Sowings this player made."})
    total_loss = fields.Integer(metadata={"description": "Seeds lost in all against perfect play."})
    average_loss = fields.Float(metadata={"description": "Average loss per sowing, in seeds."})
    judgements = fields.Nested(
        JudgementCountsSchema, metadata={"description": "How many sowings got each judgement."}
    )
    exact = fields.Boolean(metadata={"description": "Whether every loss of this player is exact."})


@answer()
class SummarySchema(ma.Schema):
    south = fields.Nested(PlayerSummarySchema, metadata={"description": "South's summary."})
    north = fields.Nested(PlayerSummarySchema, metadata={"description": "North's summary."})


@answer()
class GameMoveSchema(ma.Schema):
    index = fields.Integer(metadata={"description": "The sowing's index in the game, from 0."})
    mover = fields.String(metadata={"description": "Who sowed: south or north."})
    move = move_field()
    position = fields.String(
        metadata={"description": "The position before the sowing, compact notation."}
    )
    value_before = fields.Integer(
        metadata={"description": "The mover's value of the position before the sowing."}
    )
    value_after = fields.Integer(
        metadata={"description": "The mover's value after the sowing (the value of the move)."}
    )
    best_moves = fields.List(
        move_field(), metadata={"description": "Every optimal move in the position before."}
    )
    loss = fields.Integer(
        metadata={"description": "value_before - value_after: seeds lost against perfect play."}
    )
    judgement = fields.String(
        validate=validate.OneOf(["best", "inaccuracy", "mistake", "blunder"]),
        metadata={"description": JUDGEMENT_DOC},
    )
    exact = fields.Boolean(
        metadata={
            "description": "Whether both values (so the loss) are proven; otherwise they are "
            "estimates of a search that ran out of budget."
        }
    )
    extra_turn = fields.Boolean(metadata={"description": "The sowing ended in the mover's store."})
    captured = fields.Integer(metadata={"description": "Seeds captured by the sowing; 0 if none."})


@answer()
class GameAnswerSchema(ma.Schema):
    rules = fields.Nested(
        RulesOptionsSchema, metadata={"description": "The rules, every option normalized."}
    )
    start = fields.String(metadata={"description": "The start position, compact notation."})
    game = fields.String(metadata={"description": "The game, canonical Finnish notation."})
    annotated = fields.String(
        metadata={
            "description": "The game in the Finnish notation with each sowing's judgement: "
            "'?!' inaccuracy, '?' mistake, '??' blunder."
        }
    )
    position = fields.String(metadata={"description": "The final position, compact notation."})
    exact = fields.Boolean(metadata={"description": "Whether every loss is exact."})
    moves = fields.List(
        fields.Nested(GameMoveSchema), metadata={"description": "One entry per sowing, in order."}
    )
    summary = fields.Nested(SummarySchema, metadata={"description": "Per player."})
