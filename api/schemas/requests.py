"""Request schemas shared by several resources: the search budgets of a body and the position
parameters of a query. They check JSON types and document bounds; the request type
(:mod:`kalah_service.core.request`) validates the values."""

from __future__ import annotations

from typing import Any, Required, TypedDict

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.rules import (
    OPTION_DOCS,
    PRESETS,
)

from ..base.config import MAX_DEPTH
from ..core.request import MAX_POSITION_TEXT
from .components import POSITION_PATTERN, option_doc

# -- requests: budgets and the position parameters of a query ------------------------------

TIME_DOC = (
    "Search time budget in milliseconds; default KALAH_DEFAULT_TIME_MS, at most KALAH_MAX_TIME_MS "
    "(see GET /v1/rules for this server's values; above it is a 422)."
)
DEPTH_DOC = (
    f"Search only this many sowings deep (a heuristic value unless proven); at most {MAX_DEPTH}."
)
NODES_DOC = "Node budget of the search; at most KALAH_MAX_NODES."


class LimitsSchema(ma.Schema):
    """Search budgets in a body. Only the JSON type is checked here (strict: a JSON 5.5 or
    1e308 is not an integer); the bounds are documented here and checked by
    :meth:`kalah_service.core.request.Limits.checked` (a limit-exceeded problem with its max)."""

    time_ms = fields.Integer(strict=True, metadata={"description": TIME_DOC, "minimum": 1})
    depth = fields.Integer(
        strict=True, metadata={"description": DEPTH_DOC, "minimum": 1, "maximum": MAX_DEPTH}
    )
    nodes = fields.Integer(strict=True, metadata={"description": NODES_DOC, "minimum": 1})


class LimitsArgs(TypedDict, total=False):
    """What :class:`LimitsSchema` loads: the budgets the client gave, bounds not yet checked."""

    time_ms: int
    depth: int
    nodes: int


def _option_parameter(option: str) -> fields.Field[Any]:
    """A query parameter overriding one rule option: its type converts the text, its values
    are documented from :mod:`kalah_core.rules` and checked by the request type."""
    doc = option_doc(option)
    metadata = {"description": f"Override: {OPTION_DOCS[option]}."}
    if doc["type"] == "integer":
        return fields.Integer(
            metadata={**metadata, "minimum": doc["minimum"], "maximum": doc["maximum"]}
        )
    if doc["type"] == "string":
        return fields.String(metadata={**metadata, "enum": doc["enum"]})
    return fields.Boolean(metadata=metadata)


class PositionQuerySchema(ma.Schema):
    """The position parameters of a query (``GET /v1/analysis``, ``/v1/best-move``,
    ``/v1/board.svg``): ``position``, ``rules`` and one parameter per rule option."""

    position = fields.String(
        required=True,
        validate=validate.Length(min=1),
        metadata={
            "description": "'start' or the compact notation, e.g. 444444-0-444444-0-s.",
            "pattern": POSITION_PATTERN,
            "maxLength": MAX_POSITION_TEXT,
        },
    )
    rules = fields.String(
        load_default="kalah",
        metadata={
            "description": "The preset whose options the other rule parameters override; default "
            "kalah.",
            "enum": list(PRESETS),
        },
    )
    houses = _option_parameter("houses")
    seeds = _option_parameter("seeds")
    capture = _option_parameter("capture")
    end = _option_parameter("end")
    remaining = _option_parameter("remaining")
    majority = _option_parameter("majority")
    pie = _option_parameter("pie")


class PositionQuery(TypedDict, total=False):
    """What :class:`PositionQuerySchema` loads: the position, the preset and the options the
    client overrode (values not yet checked)."""

    position: Required[str]
    rules: Required[str]
    houses: int
    seeds: int
    capture: str
    end: str
    remaining: str
    majority: bool
    pie: bool
