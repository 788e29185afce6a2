"""Query of ``GET /v1/board.svg``: the position parameters of ``GET /v1/analysis`` plus how to
draw it."""

from __future__ import annotations

from collections.abc import Mapping

from marshmallow import fields, validate

from kalah_core.moves import Move

from ..schemas.fields import MoveField
from ..schemas.requests import PositionQuerySchema

MIN_SIZE, MAX_SIZE = 64, 2048


class QueryMoveField(MoveField):
    """A move in a query string (``move=4``, ``move=swap``): typed as every other move (the
    ``Move`` component: an integer or ``"swap"``), so a typed client sends ``move=4``."""

    def _deserialize(
        self, value: object, attr: str | None, data: Mapping[str, object] | None, **kwargs: object
    ) -> Move:
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 2:
            value = int(value)
        return super()._deserialize(value, attr, data, **kwargs)


class BoardImageQuerySchema(PositionQuerySchema):
    move = QueryMoveField(
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
