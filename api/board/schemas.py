"""Query of ``GET /v1/board.svg``: the position parameters of ``GET /v1/analysis`` plus how to
draw it."""

from __future__ import annotations

from marshmallow import fields, validate

from kalah_core.rules import MAX_HOUSES

from ..schemas.requests import PositionQuerySchema

MIN_SIZE, MAX_SIZE = 64, 2048


class BoardImageQuerySchema(PositionQuerySchema):
    move = fields.String(
        validate=validate.Regexp(
            r"^([1-9]|[1-9][0-9]|swap)$", error=f"a house number 1..{MAX_HOUSES} or 'swap'"
        ),
        metadata={
            "description": "A legal move of the side to move to mark: a house number from the "
            "mover's own left, or 'swap'."
        },
    )
    flip = fields.Boolean(
        load_default=False,
        metadata={"description": "Draw the board from North's seat (North's houses below)."},
    )
    size = fields.Integer(
        validate=validate.Range(min=MIN_SIZE, max=MAX_SIZE),
        metadata={
            "description": f"Width of the image in pixels, {MIN_SIZE}..{MAX_SIZE}; default its "
            "natural width (the SVG scales)."
        },
    )
