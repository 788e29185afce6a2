"""Requests and answers of ``POST /v1/batch`` and ``GET /v1/jobs/{id}``."""

from __future__ import annotations

from typing import Required, TypedDict

import marshmallow as ma
from marshmallow import fields, validate

from kalah_core.rules import PRESETS

from ..base.config import BATCH_PAGE_MAX
from ..jobs.store import STATUSES
from ..schemas.components import ref
from ..schemas.fields import JsonValue, RulesField, answer, position_field, rules_field
from ..schemas.requests import LimitsArgs, LimitsSchema

RESULT_DOC = {
    "description": "The item's analysis answer (as POST /v1/analysis gives it; `cached` says "
    "whether it came from the cache, a repeat of an earlier item counting as cached), a problem "
    "object for an item that cannot be analysed (e.g. field positions.17.position), or null "
    "while the item's chunk is not finished.",
    "nullable": True,
    "oneOf": [
        ref("Analysis"),
        ref("Problem"),
    ],
}


class BatchItemSchema(ma.Schema):
    position = position_field(required=True)
    rules = RulesField(
        metadata={
            "description": "This item's rules, overriding the batch's: a preset name ("
            + ", ".join(PRESETS)
            + ") or an object of options.",
        }
    )
    limits = fields.Nested(
        LimitsSchema,
        metadata={
            "description": "This item's search budgets; each given one overrides the batch's."
        },
    )


class BatchRequestSchema(ma.Schema):
    positions = fields.List(
        fields.Nested(BatchItemSchema),
        required=True,
        validate=validate.Length(min=1),
        metadata={
            "description": "The positions to analyse, each with optional rules and limits of its "
            "own; at most KALAH_BATCH_MAX_POSITIONS (see GET /v1/rules)."
        },
    )
    rules = rules_field()
    limits = fields.Nested(
        LimitsSchema,
        load_default=dict,
        metadata={
            "description": "Search budgets of every item that does not give its own; the items' "
            "time_ms add up to at most KALAH_BATCH_MAX_BUDGET_MS."
        },
    )


class BatchItemBody(TypedDict, total=False):
    """What :class:`BatchItemSchema` loads."""

    position: Required[JsonValue]
    rules: JsonValue
    limits: LimitsArgs


class BatchBody(TypedDict, total=False):
    """What :class:`BatchRequestSchema` loads."""

    positions: Required[list[BatchItemBody]]
    rules: Required[JsonValue]
    limits: Required[LimitsArgs]


@answer()
class BatchAnswerSchema(ma.Schema):
    results = fields.List(
        fields.Raw(metadata=RESULT_DOC),
        metadata={"description": "One result per item, in input order."},
    )


@answer()
class ProgressSchema(ma.Schema):
    done = fields.Integer(metadata={"description": "Items answered so far (problems included)."})
    total = fields.Integer(metadata={"description": "Items in the batch."})


class JobStatusSchema(ma.Schema):
    """What every answer about a job says (the fields both job answers share)."""

    id = fields.String(metadata={"description": "The job id."})
    status = fields.String(
        validate=validate.OneOf(list(STATUSES)),
        metadata={
            "description": "queued (no chunk started), running, finished (every result is "
            "there), failed (a chunk could not be read; see error) or cancelled (by its "
            "owner, DELETE: the results so far stay readable)."
        },
    )
    progress = fields.Nested(ProgressSchema, metadata={"description": "How far the job is."})
    error = fields.String(
        allow_none=True, metadata={"description": "Why the job failed; null otherwise."}
    )
    warning = fields.String(
        allow_none=True,
        metadata={
            "description": "Why a queued or running job cannot advance now (no batch worker "
            "has reported recently: it waits until one runs); null otherwise."
        },
    )


@answer()
class JobStatusAnswerSchema(JobStatusSchema):
    """DELETE /v1/jobs/{id}: the job's status after cancelling."""


@answer()
class JobAcceptedSchema(JobStatusSchema):
    """The 202 answer of POST /v1/batch: the new job's status and where to poll it."""

    location = fields.String(metadata={"description": "The job's URL (as in the Location header)."})


@answer()
class JobSchema(JobStatusSchema):
    """GET /v1/jobs/{id}: the job's status and a page of its results."""

    offset = fields.Integer(metadata={"description": "Index of the first result of this page."})
    limit = fields.Integer(metadata={"description": "Most results in this page."})
    next = fields.String(
        allow_none=True,
        metadata={"description": "The URL of the next page; null on the last page."},
    )
    results = fields.List(
        fields.Raw(metadata=RESULT_DOC),
        metadata={"description": "This page's results, in input order."},
    )


class JobQuerySchema(ma.Schema):
    offset = fields.Integer(
        load_default=0,
        validate=validate.Range(min=0),
        metadata={"description": "Index of the first result to return; default 0."},
    )
    limit = fields.Integer(
        validate=validate.Range(min=1),
        metadata={
            "description": f"Most results to return, 1 to {BATCH_PAGE_MAX} (a 422 outside): "
            "default 100; with Accept: application/x-ndjson, every result from offset on "
            "unless a limit is given."
        },
    )


class JobQuery(TypedDict, total=False):
    """What :class:`JobQuerySchema` loads."""

    offset: Required[int]
    limit: int
