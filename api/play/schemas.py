"""Request and answer of ``POST /v1/play``."""

from __future__ import annotations

from typing import Required, TypedDict

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.finnish import MAX_GAME_LENGTH
from kalah_core.moves import Move

from ..base.config import MAX_MOVES
from ..schemas.answers import BoardSchema, RulesOptionsSchema
from ..schemas.fields import JsonValue, answer, move_field, position_field, rules_field


class PlayRequestSchema(ma.Schema):
    position = position_field(load_default="start")
    rules = rules_field()
    moves = fields.List(
        move_field(),
        validate=validate.Length(max=MAX_MOVES),
        metadata={
            "description": f"Moves to play in order (at most {MAX_MOVES}); give this or game, "
            "not both."
        },
    )
    game = fields.String(
        validate=validate.Length(min=1, max=MAX_GAME_LENGTH),
        metadata={
            "description": "A game in the Finnish notation, e.g. "
            "'1-2, 5-31, 2-5, 3-2, 2*-1*'; give this or moves, not both."
        },
    )

    @ma.validates_schema
    def _one_of(self, data: dict[str, object], **kwargs: object) -> None:
        if "moves" in data and "game" in data:
            raise ma.ValidationError("give moves or game, not both", field_name="game")


class PlayBody(TypedDict, total=False):
    """What :class:`PlayRequestSchema` loads."""

    position: Required[JsonValue]
    rules: Required[JsonValue]
    moves: list[Move]
    game: str


@answer()
class ScoreSchema(ma.Schema):
    south = fields.Integer(metadata={"description": "South's final store."})
    north = fields.Integer(metadata={"description": "North's final store."})


@answer()
class StatusSchema(ma.Schema):
    over = fields.Boolean(metadata={"description": "Whether the game is over."})
    to_move = fields.String(metadata={"description": "The side to move (meaningless once over)."})
    legal_moves = fields.List(
        move_field(), metadata={"description": "The legal moves; empty when over."}
    )
    score = fields.Nested(
        ScoreSchema,
        allow_none=True,
        metadata={"description": "The final stores once over, else null."},
    )
    winner = fields.String(
        allow_none=True,
        metadata={"description": "south, north, or draw once over; null while the game goes on."},
    )


@answer()
class StepSchema(ma.Schema):
    move = move_field()
    mover = fields.String(metadata={"description": "The side that made the move: south or north."})
    extra_turn = fields.Boolean(
        metadata={"description": "The last seed fell in the mover's store: same side again."}
    )
    captured = fields.Integer(
        metadata={
            "description": "Seeds the capture put in the store, the capturing seed included; 0 "
            "if none."
        }
    )
    over = fields.Boolean(metadata={"description": "Whether this move ended the game."})
    position = fields.String(
        metadata={"description": "The position after the move, compact notation."}
    )
    board = fields.Nested(
        BoardSchema, metadata={"description": "The position after the move, JSON form."}
    )


@answer()
class PlayAnswerSchema(ma.Schema):
    rules = fields.Nested(
        RulesOptionsSchema, metadata={"description": "The rules, every option normalized."}
    )
    start = fields.String(
        metadata={"description": "The position the moves were played from, compact notation."}
    )
    steps = fields.List(
        fields.Nested(StepSchema), metadata={"description": "One entry per move, in order."}
    )
    position = fields.String(metadata={"description": "The final position, compact notation."})
    board = fields.Nested(BoardSchema, metadata={"description": "The final position, JSON form."})
    status = fields.Nested(
        StatusSchema, metadata={"description": "The game status in the final position."}
    )
    game = fields.String(
        metadata={
            "description": "The moves played, canonical Finnish notation ('*' on every capture)."
        }
    )
