"""The request fields shared by several resources (a position, rules, a move: their JSON
type only, the request type validates them) and :func:`answer`, which marks an answer
schema's fields as always present."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import marshmallow as ma
from marshmallow import fields

from kalah_core.moves import Move
from kalah_core.rules import (
    MAX_HOUSES,
)

from .components import MOVE_DOC, POSITION_DOC

SchemaClass = TypeVar("SchemaClass", bound=type[ma.Schema])

JsonValue = str | dict[str, Any]
"""A position or rules as sent: a string, or a JSON object the request type validates."""


def answer(*optional: str) -> Callable[[SchemaClass], SchemaClass]:
    """Class decorator of an answer schema: every field is always present (``required`` in
    the contract) except the ``optional`` ones."""

    def mark(cls: SchemaClass) -> SchemaClass:
        unknown = set(optional) - set(cls._declared_fields)
        assert not unknown, f"{cls.__name__} has no fields {unknown}"
        for name, field in cls._declared_fields.items():
            field.required = name not in optional
        return cls

    return mark


class _TextOrObject(fields.Field[JsonValue]):
    """A value given as a string or a JSON object; its meaning is the request type's to check."""

    def _deserialize(
        self, value: object, attr: str | None, data: Mapping[str, object] | None, **kwargs: object
    ) -> JsonValue:
        if isinstance(value, str | dict):
            return value
        raise self.make_error("type")


class PositionField(_TextOrObject):
    """A position: ``"start"``, the compact notation, or the JSON form (object or its text).
    Only the JSON type is checked here; the request type (:mod:`kalah_service.core.request`) parses
    and validates it."""

    component = "Position"

    default_error_messages = {  # noqa: RUF012 - marshmallow's convention
        "type": "A position is 'start', a compact notation string or an object.",
    }


class RulesField(_TextOrObject):
    """Rules: a preset name or an object of options (the JSON type only: validated by the
    request type)."""

    component = "Rules"

    default_error_messages = {  # noqa: RUF012
        "type": "Rules are a preset name or an object of options.",
    }


class MoveField(fields.Field[Move]):
    """A move: a house number or ``"swap"`` (whether it is legal is the game's to say)."""

    component = "Move"

    default_error_messages = {  # noqa: RUF012
        "type": f"A move is a house number (1..{MAX_HOUSES}) or 'swap'.",
    }

    def _deserialize(
        self, value: object, attr: str | None, data: Mapping[str, object] | None, **kwargs: object
    ) -> Move:
        if value == "swap" or (
            isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_HOUSES
        ):
            return value
        raise self.make_error("type")

    def _serialize(
        self, value: Move | None, attr: str | None, obj: object, **kwargs: object
    ) -> Move | None:
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
