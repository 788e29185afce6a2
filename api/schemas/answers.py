"""Answer schemas shared by several resources: the rules, a position in JSON form, and the
problem every error answers with."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.rules import (
    OPTION_CHOICES,
    OPTION_DOCS,
)

from .fields import answer


@answer()
class RulesOptionsSchema(ma.Schema):
    """Every rule option, normalized."""

    houses = fields.Integer(metadata={"description": OPTION_DOCS["houses"]})
    seeds = fields.Integer(metadata={"description": OPTION_DOCS["seeds"]})
    capture = fields.String(
        validate=validate.OneOf(OPTION_CHOICES["capture"]),
        metadata={"description": OPTION_DOCS["capture"]},
    )
    end = fields.String(
        validate=validate.OneOf(OPTION_CHOICES["end"]),
        metadata={"description": OPTION_DOCS["end"]},
    )
    remaining = fields.String(
        validate=validate.OneOf(OPTION_CHOICES["remaining"]),
        metadata={"description": OPTION_DOCS["remaining"]},
    )
    majority = fields.Boolean(metadata={"description": OPTION_DOCS["majority"]})
    pie = fields.Boolean(metadata={"description": OPTION_DOCS["pie"]})


@answer()
class BoardSchema(ma.Schema):
    """A position in JSON form."""

    south = fields.List(
        fields.Integer(), metadata={"description": "South's houses, house 1 (South's left) first."}
    )
    north = fields.List(
        fields.Integer(), metadata={"description": "North's houses, house 1 (North's left) first."}
    )
    stores = fields.List(fields.Integer(), metadata={"description": "The stores: [south, north]."})
    to_move = fields.String(
        validate=validate.OneOf(["south", "north"]), metadata={"description": "The side to move."}
    )
    swap_available = fields.Boolean(
        metadata={"description": "Whether North may still answer 'swap' (pie rule)."}
    )


@answer("instance", "field", "max")
class ProblemSchema(ma.Schema):
    """An RFC 9457 problem: every error of this API."""

    type = fields.String(
        metadata={
            "description": "A URI reference naming the problem type (/problems/<slug>), or "
            "about:blank."
        }
    )
    title = fields.String(metadata={"description": "A short summary of the problem type."})
    status = fields.Integer(metadata={"description": "The HTTP status code."})
    detail = fields.String(
        metadata={"description": "What went wrong with this request, naming the input."}
    )
    instance = fields.String(metadata={"description": "The request path."})
    field = fields.String(
        metadata={
            "description": "The offending request field as a dotted path, e.g. limits.time_ms, "
            "rules.houses, moves.3."
        }
    )
    max = fields.Integer(
        metadata={"description": "For a limit above the server's maximum: that maximum."}
    )
