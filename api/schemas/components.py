"""The contract's shared vocabulary as hand-written component schemas (:data:`COMPONENTS`:
``Position``, ``Rules``, ``Move`` and what they are made of), referenced by every field that
holds one (:func:`component_ref`). Each rule option's values come from
:mod:`kalah_core.rules`, where they are spelled once."""

from __future__ import annotations

from typing import Any

from marshmallow import fields

from kalah_core.position import COMPACT_PATTERN, MAX_SEEDS
from kalah_core.rules import (
    MAX_HOUSES,
    OPTION_CHOICES,
    OPTION_DOCS,
    OPTION_FLAGS,
    OPTION_RANGES,
    PRESETS,
)

from ..core.request import MAX_POSITION_TEXT


def option_doc(option: str) -> dict[str, Any]:
    """The JSON schema of a rule option's value, from :mod:`kalah_core.rules` (where each
    option's values are spelled, once)."""
    if option in OPTION_RANGES:
        low, high = OPTION_RANGES[option]
        return {"type": "integer", "minimum": low, "maximum": high}
    if option in OPTION_CHOICES:
        return {"type": "string", "enum": list(OPTION_CHOICES[option])}
    assert option in OPTION_FLAGS, option
    return {"type": "boolean"}


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
        **{
            option: {**option_doc(option), "description": doc}
            for option, doc in OPTION_DOCS.items()
        },
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
