"""Answers of ``/livez`` and ``/readyz``."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields, validate

from ..schemas import answer


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
        CheckSchema, metadata={"description": "The answer cache (Redis reachable, or the LRU)."}
    )
    engine = fields.Nested(
        CheckSchema, metadata={"description": "The engine self-test (a tiny solve)."}
    )
    jobs = fields.Nested(
        CheckSchema,
        metadata={
            "description": "Whether batch jobs can run: a `kalah worker` reported within 10 s "
            "(with Redis), or the server's own processes run them (embedded store)."
        },
    )


@answer()
class ReadySchema(ma.Schema):
    status = fields.String(
        validate=validate.OneOf(["ready", "degraded"]),
        metadata={
            "description": "'ready', or 'degraded' when analyses are served but batch jobs "
            "cannot run (checks.jobs says why); when not ready the answer is a 503 problem."
        },
    )
    backend = fields.String(
        metadata={
            "description": "The cache backend: redis, or embedded (one store shared by every "
            "process of the machine)."
        }
    )
    checks = fields.Nested(ChecksSchema, metadata={"description": "Each check and its detail."})
