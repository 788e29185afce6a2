"""``GET /v1/rules``: presets, options, this server's limits, databases and book."""

from __future__ import annotations

import dataclasses

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from kalah_core import book, deepbook
from kalah_core.finnish import MAX_GAME_LENGTH
from kalah_core.position import MAX_NOTATION_LENGTH, MAX_SEEDS
from kalah_core.rules import OPTION_DOCS, PRESET_DOCS, PRESETS, Rules, option_values

from ..base.config import (
    MAX_BATCH_BODY_BYTES,
    MAX_BODY_BYTES,
    MAX_DEPTH,
    MAX_MOVES,
    MAX_PV_SOWINGS,
    TIERS,
)
from ..core.request import MAX_POSITION_TEXT
from ..edge.charging import limits_apply
from ..ratelimit.costs import SEARCH_UNIT_MS
from .schemas import RulesAnswerSchema

blp = Blueprint("rules", __name__, url_prefix="/v1", description="The rule presets and options.")


@blp.route("/rules")
class RulesView(MethodView):
    @blp.response(200, RulesAnswerSchema, description="The presets, options and limits.")
    def get(self) -> dict[str, object]:
        """The presets and rule options with their descriptions, and this server's limits."""
        default = Rules()
        settings = current_app.extensions["kalah"].settings
        types = {f.name: f.type for f in dataclasses.fields(Rules)}
        return {
            "default_preset": "kalah",
            "presets": [
                {"name": name, "description": PRESET_DOCS.get(name, ""), "rules": rules.to_json()}
                for name, rules in PRESETS.items()
            ],
            "options": [
                {
                    "name": name,
                    "description": doc,
                    "type": {"int": "integer", "bool": "boolean"}.get(str(types[name]), "string"),
                    "values": option_values(name),
                    "default": getattr(default, name),
                }
                for name, doc in OPTION_DOCS.items()
            ],
            "limits": {
                "default_time_ms": settings.default_time_ms,
                "max_time_ms": settings.max_time_ms,
                "max_stream_time_ms": settings.stream_max_time_ms,
                "max_depth": MAX_DEPTH,
                "max_nodes": settings.max_nodes,
                "max_body_bytes": MAX_BODY_BYTES,
                "max_moves": MAX_MOVES,
                "batch_max_positions": settings.batch_max_positions,
                "batch_inline_max": settings.batch_inline_max,
                "batch_max_budget_ms": settings.batch_max_budget_ms,
                "batch_max_body_bytes": MAX_BATCH_BODY_BYTES,
                "batch_jobs": True,  # with Redis by kalah worker, else by the server itself
                "batch_jobs_need_key": bool(settings.state_url),
                "max_pv_sowings": MAX_PV_SOWINGS,
                "max_seeds": MAX_SEEDS,
                "max_notation_length": MAX_NOTATION_LENGTH,
                "max_position_text": MAX_POSITION_TEXT,
                "max_game_length": MAX_GAME_LENGTH,
            },
            "rate_limits": {
                "tiers": {tier: settings.tier_limit(tier) for tier in TIERS},
                "search_unit_ms": SEARCH_UNIT_MS,
                "mode": settings.limits,
                "applies": limits_apply(settings),
            },
            "databases": current_app.extensions["kalah"].databases().status(),
            "book": book.shipped().info(),
            "deep_book": deepbook.shipped().info(),
        }
