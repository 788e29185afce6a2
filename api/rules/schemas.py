"""Answer of ``GET /v1/rules``."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields, validate

from ..schemas.answers import RulesOptionsSchema
from ..schemas.fields import answer


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
    max_stream_time_ms = fields.Integer(
        metadata={
            "description": "The largest search budget of a live analysis (/v1/analysis asked "
            "for text/event-stream or application/x-ndjson)."
        }
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
            "description": "Whether batches too large to answer inline become jobs (always: "
            "run by kalah worker with Redis, by the server's own processes without)."
        }
    )
    batch_jobs_need_key = fields.Boolean(
        metadata={"description": "Whether a batch job needs an API key (with Redis)."}
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
        metadata={"description": "The longest game text (Finnish notation) accepted by /v1/play."}
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
    mode = fields.String(
        validate=validate.OneOf(["auto", "on", "off"]),
        metadata={
            "description": "KALAH_LIMITS: auto (every caller but one that connects from a "
            "loopback address, with no X-Forwarded-For or Forwarded header, to a server "
            "without Redis), on (every caller) or off (none)."
        },
    )
    applies = fields.Boolean(
        metadata={
            "description": "Whether the rate limits apply to the caller of this request (false: "
            "it is not charged, and answers carry no RateLimit headers)."
        }
    )


@answer()
class DatabaseSchema(ma.Schema):
    rules = fields.String(
        metadata={"description": "The rule key it serves: houses, capture, end, remaining."}
    )
    max_seeds = fields.Integer(
        metadata={"description": "Every board with at most this many seeds in houses."}
    )
    path = fields.String(metadata={"description": "Its file's name on the server."})


@answer()
class DatabaseBuildSchema(ma.Schema):
    rules = fields.String(metadata={"description": "The rule key."})
    presets = fields.List(fields.String(), metadata={"description": "The presets it serves."})
    max_seeds = fields.Integer(metadata={"description": "The size being built."})
    state = fields.String(
        validate=validate.OneOf(["queued", "building", "attached", "failed"]),
        metadata={"description": "queued, building, attached or failed."},
    )
    seconds = fields.Float(
        allow_none=True,
        metadata={
            "description": "How long the attached database's build took (solving and writing "
            "it), as the build recorded it beside the file: the same from every worker; null "
            "until attached, or for a file without its build's record."
        },
    )
    progress = fields.Float(
        metadata={
            "description": "Share of the boards solved, 0..1 (1 once attached, 0 while queued "
            "or waiting for another build); every process of the server reads the same."
        }
    )
    eta_s = fields.Float(
        allow_none=True,
        metadata={
            "description": "Seconds until the build is done, estimated from its progress so "
            "far; 0 once attached, null while unknown (queued, or under 1 % done)."
        },
    )


@answer()
class DatabasesSchema(ma.Schema):
    setting = fields.String(
        metadata={
            "description": "KALAH_EGDB_PATH: auto (the cache folder), off, or paths (files "
            "or folders the server was given; their names are not shown)."
        }
    )
    build_seeds = fields.Integer(
        metadata={
            "description": "Size of the largest background build (0: none, outside auto); "
            "each build's size is in builds."
        }
    )
    attached = fields.List(
        fields.Nested(DatabaseSchema),
        metadata={"description": "The databases this server's searches probe."},
    )
    builds = fields.List(
        fields.Nested(DatabaseBuildSchema),
        metadata={"description": "The background builds of auto mode, most used first."},
    )


@answer()
class BookSectionSchema(ma.Schema):
    rules = fields.String(metadata={"description": "The rule key the section serves."})
    presets = fields.List(fields.String(), metadata={"description": "The presets it serves."})
    depth = fields.Integer(
        metadata={"description": "Every position within this many sowings of the start."}
    )
    positions = fields.Integer(metadata={"description": "Boards held."})


class DeepBookSectionSchema(ma.Schema):
    rules = fields.String(
        metadata={"description": "The preset whose options the section plays (else a rule key)."}
    )
    houses = fields.Integer(metadata={"description": "Houses a side."})
    seeds = fields.Integer(metadata={"description": "Seeds a house at the start."})
    sowings = fields.Integer(
        metadata={"description": "Every position within this many sowings of the start."}
    )
    positions = fields.Integer(metadata={"description": "Positions held."})
    start_lower = fields.Integer(
        allow_none=True,
        metadata={"description": "The proven lower bound on the start's value (South to move)."},
    )
    start_upper = fields.Integer(
        allow_none=True,
        metadata={"description": "The proven upper bound on the start's value."},
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
    databases = fields.Nested(
        DatabasesSchema,
        metadata={"description": "Endgame databases: attached, and building in the background."},
    )
    book = fields.List(
        fields.Nested(BookSectionSchema),
        metadata={"description": "The opening book's sections: exact answers without search."},
    )
    deep_book = fields.List(
        fields.Nested(DeepBookSectionSchema),
        metadata={
            "description": "The deep book's sections (the 6-seed openings): deep estimates "
            "within proven bounds, answered without search for budgets up to 10 s; a longer "
            "budget searches and keeps the book's bounds."
        },
    )
