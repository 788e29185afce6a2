"""Answer of ``GET /problems/<slug>``."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields

from ..schemas.fields import answer


@answer()
class ProblemTypeSchema(ma.Schema):
    type = fields.String(
        metadata={"description": "The problem type URI, as in a problem's type field."}
    )
    title = fields.String(metadata={"description": "The problem type's title."})
    status = fields.Integer(metadata={"description": "The HTTP status of this problem type."})
    description = fields.String(metadata={"description": "When this problem is answered."})
