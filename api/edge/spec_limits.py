"""What the spec can say about valid requests beyond the marshmallow fields (an apispec plugin).

- The budgets' maxima are this server's (``KALAH_MAX_TIME_MS``, ``KALAH_MAX_NODES``): the
  served ``/openapi.json`` states them, so a client (or a fuzzer) knows that a larger budget is
  a 422; the committed ``api/openapi.json`` has the defaults.
- ``POST /v1/games/analysis`` takes exactly one of ``game`` and ``moves``; ``POST /v1/play``
  not both (schema-level rules marshmallow cannot export).
"""

from __future__ import annotations

from typing import Any

from apispec import BasePlugin

from ..base.config import Settings

REQUEST_LIMITS = ("Limits", "GameLimits")
"""The component schemas of request budgets (answers' ``EffectiveLimits`` report, not ask)."""


class ServerLimitsPlugin(BasePlugin):
    def __init__(self, settings: Settings) -> None:
        self.maxima = {"time_ms": settings.max_time_ms, "nodes": settings.max_nodes}

    def schema_helper(
        self, name: str, definition: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any] | None:
        if name in REQUEST_LIMITS:
            for field, maximum in self.maxima.items():
                if field in definition.get("properties", {}):
                    definition["properties"][field]["maximum"] = maximum
        if name == "GameRequest":
            # Exactly one of game and moves: neither both nor none. Written with "not", not as
            # a top-level oneOf, which client generators turn into an untyped body.
            either = {"anyOf": [{"required": ["game"]}, {"required": ["moves"]}]}
            return {"not": {"anyOf": [{"required": ["game", "moves"]}, {"not": either}]}}
        if name == "PlayRequest":
            return {"not": {"required": ["moves", "game"]}}
        return None

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        for operation in (operations or {}).values():
            for parameter in operation.get("parameters", []):
                maximum = self.maxima.get(parameter.get("name", ""))
                if parameter.get("in") == "query" and maximum is not None:
                    parameter.setdefault("schema", {})["maximum"] = maximum
