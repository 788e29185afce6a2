"""Schemas shared by several resources: the problem body, positions, rules and moves.

The contract's shared vocabulary is a set of named component schemas (:data:`COMPONENTS`:
``Position``, ``Rules``, ``Move`` and what they are made of), referenced by every field
that holds one; answer schemas mark every field they always carry as required
(:func:`answer`), so generated clients need no ``Unset`` checks for them.
"""

from __future__ import annotations

from typing import Any, TypeVar

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.position import COMPACT_PATTERN, MAX_SEEDS
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS, OPTION_DOCS, PRESETS

MAX_POSITION_TEXT = 1024
"""Longest position text accepted (the compact notation is at most 64 characters; the rest is
room for the JSON form sent as text)."""


def ref(name: str) -> dict[str, str]:
    """A reference to the component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


BOARD_DOC = {
    "type": "object",
    "description": "A position in JSON form; houses are listed from each player's own left. "
    "Only the houses are required.",
    "properties": {
        "south": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": MAX_SEEDS},
            "minItems": 1,
            "maxItems": MAX_HOUSES,
            "description": "South's houses.",
        },
        "north": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": MAX_SEEDS},
            "minItems": 1,
            "maxItems": MAX_HOUSES,
            "description": "North's houses.",
        },
        "stores": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": MAX_SEEDS},
            "minItems": 2,
            "maxItems": 2,
            "description": "The stores: [south, north]; default [0, 0].",
        },
        "to_move": {
            "type": "string",
            "enum": ["south", "north"],
            "description": "Side to move; default south.",
        },
        "swap_available": {
            "type": "boolean",
            "description": "Whether North may still answer 'swap' (pie rule); default false.",
        },
    },
    "required": ["south", "north"],
}

RULES_OBJECT_DOC = {
    "type": "object",
    "description": "A preset with some options overridden.",
    "properties": {
        "preset": {"allOf": [ref("PresetName")], "description": "The base preset; default kalah."},
        "houses": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_HOUSES,
            "description": OPTION_DOCS["houses"],
        },
        "seeds": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_START_SEEDS,
            "description": OPTION_DOCS["seeds"],
        },
        "capture": {
            "type": "string",
            "enum": ["nonempty", "always"],
            "description": OPTION_DOCS["capture"],
        },
        "end": {
            "type": "string",
            "enum": ["either-side-empty", "mover-empty"],
            "description": OPTION_DOCS["end"],
        },
        "remaining": {
            "type": "string",
            "enum": ["owner", "empty-side"],
            "description": OPTION_DOCS["remaining"],
        },
        "majority": {"type": "boolean", "description": OPTION_DOCS["majority"]},
        "pie": {"type": "boolean", "description": OPTION_DOCS["pie"]},
    },
    "additionalProperties": False,
}

PRESET_NAME_DOC = {
    "type": "string",
    "enum": list(PRESETS),
    "description": "A preset: " + "; ".join(PRESETS) + " (see GET /v1/rules).",
}

MOVE_DOC = {
    "description": "A move: a house number 1..houses from the mover's left, or 'swap'.",
    "oneOf": [
        {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_HOUSES,
            "description": "A house, 1..houses from the mover's left.",
        },
        {"type": "string", "enum": ["swap"], "description": "The pie rule's swap."},
    ],
}


POSITION_PATTERN = rf"^\s*(start|{COMPACT_PATTERN}|\{{[\s\S]*)\s*$"
"""A position as text: 'start', the compact notation or JSON text (surrounding spaces ignored)."""

POSITION_DOC = {
    "description": "A position: 'start' (the rules' start), the compact notation (e.g. "
    "444444-0-444444-0-s: south houses, south store, north houses, north store, side to move "
    "s/n with 'p' while the pie swap is pending), or the JSON form.",
    "oneOf": [
        {
            "type": "string",
            "maxLength": MAX_POSITION_TEXT,
            "pattern": POSITION_PATTERN,
            "example": "444444-0-444444-0-s",
        },
        ref("PositionObject"),
    ],
}

RULES_DOC = {
    "description": "Rules: a preset name, or an object {preset, <option>: value} overriding "
    "some options of a preset (default kalah).",
    "oneOf": [ref("PresetName"), ref("RulesOverrides")],
}

COMPONENTS: dict[str, dict[str, Any]] = {
    "Position": POSITION_DOC,
    "PositionObject": BOARD_DOC,
    "Rules": RULES_DOC,
    "PresetName": PRESET_NAME_DOC,
    "RulesOverrides": RULES_OBJECT_DOC,
    "Move": MOVE_DOC,
}
"""Component schemas written by hand (the ones of marshmallow schemas are named after them)."""


def component_ref(converter: object, field: fields.Field[Any], **kwargs: Any) -> dict[str, Any]:
    """apispec attribute function (a method of its field converter): a field that holds a
    named component refers to it."""
    name = getattr(field, "component", None)
    return {"allOf": [ref(name)]} if name else {}


SchemaClass = TypeVar("SchemaClass", bound=type[ma.Schema])


def answer(*optional: str) -> Any:
    """Class decorator of an answer schema: every field is always present (``required`` in
    the contract) except the ``optional`` ones."""

    def mark(cls: SchemaClass) -> SchemaClass:
        unknown = set(optional) - set(cls._declared_fields)
        assert not unknown, f"{cls.__name__} has no fields {unknown}"
        for name, field in cls._declared_fields.items():
            field.required = name not in optional
        return cls

    return mark


class PositionField(fields.Field[Any]):
    """A position: ``"start"``, the compact notation, or the JSON form (object or its text).
    Only the type is checked here; the core parses and reports the problem."""

    component = "Position"

    default_error_messages = {  # noqa: RUF012 - marshmallow's convention
        "type": "A position is 'start', a compact notation string or an object.",
        "length": f"A position text is at most {MAX_POSITION_TEXT} characters.",
    }

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, str):
            if len(value) > MAX_POSITION_TEXT:
                raise self.make_error("length")
            return value
        if isinstance(value, dict):
            return value
        raise self.make_error("type")


class RulesField(fields.Field[Any]):
    """Rules: a preset name or an object of options (validated by the core)."""

    component = "Rules"

    default_error_messages = {  # noqa: RUF012
        "type": "Rules are a preset name or an object of options.",
    }

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if (isinstance(value, str) and len(value) <= 64) or (
            isinstance(value, dict) and len(value) <= 16
        ):
            return value
        raise self.make_error("type")


class MoveField(fields.Field[Any]):
    """A move: a house number or ``"swap"``."""

    component = "Move"

    default_error_messages = {  # noqa: RUF012
        "type": f"A move is a house number (1..{MAX_HOUSES}) or 'swap'.",
    }

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if value == "swap" or (
            isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_HOUSES
        ):
            return value
        raise self.make_error("type")

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return value


def position_field(**kwargs: Any) -> PositionField:
    return PositionField(metadata={"description": POSITION_DOC["description"]}, **kwargs)


def rules_field(**kwargs: Any) -> RulesField:
    return RulesField(
        load_default="kalah",
        metadata={
            "description": "The rules: a preset name or an object of options; default "
            "kalah. See GET /v1/rules."
        },
        **kwargs,
    )


def move_field(**kwargs: Any) -> MoveField:
    return MoveField(metadata={"description": MOVE_DOC["description"]}, **kwargs)


@answer()
class RulesOptionsSchema(ma.Schema):
    """Every rule option, normalized."""

    houses = fields.Integer(metadata={"description": OPTION_DOCS["houses"]})
    seeds = fields.Integer(metadata={"description": OPTION_DOCS["seeds"]})
    capture = fields.String(
        validate=validate.OneOf(["nonempty", "always"]),
        metadata={"description": OPTION_DOCS["capture"]},
    )
    end = fields.String(
        validate=validate.OneOf(["either-side-empty", "mover-empty"]),
        metadata={"description": OPTION_DOCS["end"]},
    )
    remaining = fields.String(
        validate=validate.OneOf(["owner", "empty-side"]),
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
