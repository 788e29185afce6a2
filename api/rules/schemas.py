"""Answer of ``GET /v1/rules``."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields

from ..schemas import RulesOptionsSchema, answer


@answer()
class PresetSchema(ma.Schema):
    name = fields.String(metadata={"description": "The preset's name, as given in a rules field."})
    description = fields.String(metadata={"description": "Which rule text the preset plays."})
    rules = fields.Nested(
        RulesOptionsSchema, metadata={"description": "Every option of the preset."}
    )


@answer()
class OptionSchema(ma.Schema):
    name = fields.String(
        metadata={"description": "The option's name, as given in a rules object or query."}
    )
    description = fields.String(metadata={"description": "What the option does."})
    type = fields.String(metadata={"description": "integer, string or boolean."})
    values = fields.List(
        fields.Raw(),
        metadata={"description": "The allowed values (for integers: the minimum and maximum)."},
    )
    default = fields.Raw(metadata={"description": "The value in the default preset (kalah)."})


@answer()
class ServerLimitsSchema(ma.Schema):
    default_time_ms = fields.Integer(
        metadata={"description": "The search budget when a request gives none."}
    )
    max_time_ms = fields.Integer(
        metadata={"description": "The largest search budget a request may ask for."}
    )
    max_depth = fields.Integer(
        metadata={"description": "The largest search depth a request may ask for."}
    )
    max_nodes = fields.Integer(
        metadata={"description": "The largest node budget a request may ask for."}
    )
    max_body_bytes = fields.Integer(metadata={"description": "The largest request body accepted."})
    max_moves = fields.Integer(
        metadata={"description": "The most moves one /v1/play request may apply."}
    )
    batch_max_positions = fields.Integer(
        metadata={"description": "The most positions in one POST /v1/batch."}
    )
    batch_inline_max = fields.Integer(
        metadata={
            "description": "A batch of at most this many positions, whose budgets add up to at "
            "most max_time_ms, is answered inline; a larger one becomes a job."
        }
    )
    batch_max_budget_ms = fields.Integer(
        metadata={"description": "The most search time (sum of time_ms) one batch may ask for."}
    )
    batch_max_body_bytes = fields.Integer(
        metadata={"description": "The largest POST /v1/batch body accepted."}
    )
    batch_jobs = fields.Boolean(
        metadata={
            "description": "Whether this server has a job queue (Redis) for batches too large "
            "to answer inline."
        }
    )
    max_pv_sowings = fields.Integer(
        metadata={"description": "The longest principal variation an answer carries, in sowings."}
    )
    max_seeds = fields.Integer(
        metadata={"description": "The most seeds one position may hold (houses and stores)."}
    )
    max_notation_length = fields.Integer(
        metadata={"description": "The longest compact notation accepted."}
    )
    max_position_text = fields.Integer(
        metadata={"description": "The longest position text accepted (compact or JSON as text)."}
    )
    max_game_length = fields.Integer(
        metadata={"description": "The longest seed-000 game text accepted by /v1/play."}
    )


@answer()
class RateLimitsSchema(ma.Schema):
    tiers = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        metadata={
            "description": "Each tier's bucket in cost units, e.g. 120/minute (anonymous: per "
            "client IP; the others: per API key)."
        },
    )
    search_unit_ms = fields.Integer(
        metadata={
            "description": "A request costs 1 unit plus 1 per started this many milliseconds "
            "of search it ran."
        }
    )


@answer()
class RulesAnswerSchema(ma.Schema):
    default_preset = fields.String(
        metadata={"description": "The preset used when a request names none."}
    )
    presets = fields.List(
        fields.Nested(PresetSchema), metadata={"description": "Every named preset."}
    )
    options = fields.List(
        fields.Nested(OptionSchema), metadata={"description": "Every rule option."}
    )
    limits = fields.Nested(
        ServerLimitsSchema, metadata={"description": "This server's input limits."}
    )
    rate_limits = fields.Nested(
        RateLimitsSchema, metadata={"description": "This server's rate limits and costs."}
    )
