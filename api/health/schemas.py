"""Answers of ``/livez`` and ``/readyz``."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields, validate

from ..schemas.fields import answer


@answer()
class LiveSchema(ma.Schema):
    status = fields.String(metadata={"description": "Always 'ok' while the process answers."})


@answer()
class CheckSchema(ma.Schema):
    ok = fields.Boolean(metadata={"description": "Whether the check passed."})
    detail = fields.String(metadata={"description": "What was checked, or why it failed."})


@answer()
class ChecksSchema(ma.Schema):
    cache = fields.Nested(
        CheckSchema,
        metadata={
            "description": "The answer cache (its Redis, or the embedded store, takes a "
            "write); when it fails answers are still served and charged: the service is "
            "degraded, not unready."
        },
    )
    engine = fields.Nested(
        CheckSchema, metadata={"description": "The engine self-test (a tiny solve)."}
    )
    state = fields.Nested(
        CheckSchema,
        metadata={
            "description": "The state store (API keys, jobs, rate limits) answers, when there "
            "is one; a 503 when it does not."
        },
    )
    jobs = fields.Nested(
        CheckSchema,
        metadata={
            "description": "Whether batch jobs can run: a `kalah worker` reported within 10 s "
            "(with Redis), or the server's own processes run them (embedded store). A job "
            "store that fails a write is a 503 (not ready); no worker alive only degrades."
        },
    )
    limits = fields.Nested(
        CheckSchema,
        metadata={
            "description": "The rate limits' counters take a write (the state store's Redis, "
            "or the embedded file); a 503 when they fail, as limited requests then are."
        },
    )


@answer()
class ReadySchema(ma.Schema):
    status = fields.String(
        validate=validate.OneOf(["ready", "degraded"]),
        metadata={
            "description": "'ready', or 'degraded' when analyses are served but the answer "
            "cache is down or batch jobs cannot run (checks.cache and checks.jobs say why); "
            "when not ready (the engine, the state store, the job store or the rate limits' "
            "store) the answer is a 503 problem."
        },
    )
    backend = fields.String(
        metadata={
            "description": "The cache backend: redis, or embedded (one store shared by every "
            "process of the machine)."
        }
    )
    checks = fields.Nested(ChecksSchema, metadata={"description": "Each check and its detail."})
