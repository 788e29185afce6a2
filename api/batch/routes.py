# mypy: disable-error-code="untyped-decorator"
"""``POST /v1/batch`` and ``GET /v1/jobs/{id}``: thin routes over :mod:`.items` and :mod:`.jobs`.

A small batch is answered inline; a larger one becomes a job (202 with ``Location``) for the
``kalah worker`` processes on the API's Redis, or without Redis for the server's own
processes (:mod:`.embedded_jobs`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import redis
from flask import Response, current_app, json, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint  # type: ignore[import-untyped]

from ..config import BATCH_PAGE_MAX, MAX_BATCH_BODY_BYTES
from ..core.analyser import Analyser
from ..core.problems import ApiProblem
from ..errors import document_problems
from ..keys import Caller, current_caller
from ..ratelimit.charging import charge_batch
from ..ratelimit.costs import search_cost
from .embedded_jobs import EmbeddedJobStore
from .items import Batch as ParsedBatch
from .items import inline_ok, parse_batch
from .jobs import JobStatus, JobStore
from .schemas import (
    BatchAnswerSchema,
    BatchRequestSchema,
    JobAcceptedSchema,
    JobQuerySchema,
    JobSchema,
)

blp = Blueprint(
    "batch",
    __name__,
    url_prefix="/v1",
    description="Many positions at once: small batches inline, large ones as jobs run by "
    "workers (kalah worker) sharing the API's Redis.",
)

log = logging.getLogger("api.batch")

NDJSON = "application/x-ndjson"
DEFAULT_PAGE = 100
STREAM_PAGE = 500

ERRORS = {
    400: "A malformed body.",
    413: f"The body is above {MAX_BATCH_BODY_BYTES} bytes.",
    422: "A malformed item (field positions.<i>.<field>), invalid shared rules or limits, too "
    "many positions or too much budget.",
    503: "Redis (the job queue) is not reachable.",
}

JOB_ERRORS = {
    404: "No such job of this caller (its API key; without Redis, its address): unknown, "
    "expired, or another's.",
    422: "A bad offset or limit (1 to 1000).",
    503: "Redis (the job queue) is not reachable.",
}


def _analyser() -> Analyser:
    result: Analyser = current_app.extensions["kalah"]
    return result


def _owner(caller: Caller, embedded: bool) -> str | None:
    """Whose a job is: the API key's; on the embedded store (no keys) the caller's address."""
    return caller.identity if embedded and caller.key_id is None else caller.key_id


def _jobs() -> JobStore | EmbeddedJobStore:
    store: JobStore | EmbeddedJobStore = current_app.extensions["kalah_jobs"]
    if isinstance(store, EmbeddedJobStore):
        store.run_with(_analyser())  # this process runs queued chunks too
    return store


def _inline(batch: ParsedBatch) -> Response:
    analyser = _analyser()
    answers = [analyser.analyse_item(task) for task in batch.tasks]
    body = b'{"results":[' + b",".join(batch.assemble(answers)) + b"]}"
    return Response(body, status=200, mimetype="application/json")


def _queue_unreachable(error: Exception) -> ApiProblem:
    log.warning("the job queue (state store) is not reachable: %s", error)
    return ApiProblem("not-ready", "the job queue is not reachable; try again later")


def _job_json(status: JobStatus, store: JobStore | EmbeddedJobStore) -> dict[str, Any]:
    return {
        "id": status.id,
        "status": status.status,
        "progress": {"done": status.done, "total": status.total},
        "error": status.error,
        "warning": _stalled(store) if status.status in ("queued", "running") else None,
    }


def _stalled(store: JobStore | EmbeddedJobStore) -> str | None:
    """Why the job cannot advance now (no batch worker alive), or None."""
    try:
        return store.stalled()
    except redis.RedisError as error:  # the answer's other fields came through: say so
        log.warning("could not count the batch workers: %s", error)
        return None


@blp.route("/batch")
class Batch(MethodView):
    @blp.arguments(BatchRequestSchema(), as_kwargs=False)
    @blp.response(200, BatchAnswerSchema, description="A small batch, answered inline.")
    @blp.alt_response(
        202,
        schema=JobAcceptedSchema,
        description="A large batch became a job: poll the URL in Location (GET /v1/jobs/{id}).",
        headers={"Location": {"description": "/v1/jobs/{id}", "schema": {"type": "string"}}},
    )
    @document_problems(blp, ERRORS)
    def post(self, data: dict[str, Any]) -> Response:
        """Analyse many positions: each item is a position with optional rules and limits of
        its own (overriding the batch's `rules` and `limits`). Items are analysed exactly as
        `POST /v1/analysis` analyses one (same cache, same answer); repeated items are
        computed once. An item that cannot be analysed gets a problem object in its slot.

        At most `KALAH_BATCH_INLINE_MAX` items whose budgets add up to at most
        `KALAH_MAX_TIME_MS` are answered inline; a larger batch is a job (202, `Location:
        /v1/jobs/{id}`) run by `kalah worker` processes, or without Redis by the server's own
        processes."""
        settings = _analyser().settings
        batch = parse_batch(settings, data["positions"], data.get("rules"), data.get("limits"))
        if inline_ok(settings, batch):
            return _inline(batch)
        store = _jobs()
        # A job pays up front: 1 unit per item (bad ones too) and the cost of every distinct
        # item's search budget, as /v1/analysis would charge it. With Redis it needs an API
        # key (keys live there); without, it belongs to the caller's address.
        embedded = isinstance(store, EmbeddedJobStore)
        units = sum(search_cost(t.limits.time_ms) for t in batch.tasks)
        charge_batch(len(batch.slots), units, need_key=not embedded)
        owner = _owner(current_caller(), embedded)
        assert owner is not None  # charge_batch required a key
        try:
            status = store.create(batch, settings.batch_chunk, owner=owner)
        except redis.RedisError as error:
            raise _queue_unreachable(error) from None
        location = url_for("batch.Job", job_id=status.id)
        return Response(
            json.dumps({**_job_json(status, store), "location": location}),
            status=202,
            mimetype="application/json",
            headers={"Location": location},
        )


def _ndjson(
    store: JobStore | EmbeddedJobStore, job_id: str, offset: int, end: int
) -> Iterator[bytes]:
    for start in range(offset, end, STREAM_PAGE):
        page = store.results(job_id, start, min(STREAM_PAGE, end - start))
        if not page:
            return
        yield b"".join(line + b"\n" for line in page)


@blp.route("/jobs/<string(length=32):job_id>")
class Job(MethodView):
    @blp.arguments(JobQuerySchema(), location="query", as_kwargs=False)
    @blp.response(200, JobSchema, description="The job's status, progress and a page of results.")
    @document_problems(blp, JOB_ERRORS)
    def get(self, args: dict[str, Any], job_id: str) -> Response:
        """A batch job: its status (queued, running, finished, failed), its progress and a page
        of its results in input order (`offset`, `limit`; `next` links the following page).
        With `Accept: application/x-ndjson` the results are streamed one JSON value per line
        (every result from `offset` on unless `limit` is given) and the status is in the
        headers `Kalah-Job-Status` and `Kalah-Job-Progress` (done/total)."""
        store = _jobs()
        try:
            status = store.status(job_id)
        except redis.RedisError as error:
            raise _queue_unreachable(error) from None
        owner = _owner(current_caller(), isinstance(store, EmbeddedJobStore))
        if status is None or owner is None or status.owner != owner:
            # Only who posted a job reads it; to anyone else it does not exist.
            raise ApiProblem(
                "not-found", f"no job {job_id} of this caller (unknown or expired)", field="job_id"
            )
        offset = args["offset"]
        limit = args.get("limit")
        if limit is not None and limit > BATCH_PAGE_MAX:
            raise ApiProblem(
                "limit-exceeded",
                f"limit {limit} is above the maximum page of {BATCH_PAGE_MAX} (page with "
                "offset, or stream every result with Accept: application/x-ndjson and no limit)",
                field="limit",
                max=BATCH_PAGE_MAX,
            )
        wanted = request.accept_mimetypes.best_match(["application/json", NDJSON])
        if wanted == NDJSON:
            end = min(status.total, offset + (status.total if limit is None else limit))
            return Response(
                _ndjson(store, job_id, offset, end),
                mimetype=NDJSON,
                headers={
                    "Kalah-Job-Status": status.status,
                    "Kalah-Job-Progress": f"{status.done}/{status.total}",
                },
            )
        limit = DEFAULT_PAGE if limit is None else limit
        page = store.results(job_id, offset, limit)
        following = offset + limit
        next_url = (
            url_for("batch.Job", job_id=job_id, offset=following, limit=limit)
            if following < status.total
            else None
        )
        head = {**_job_json(status, store), "offset": offset, "limit": limit, "next": next_url}
        body = json.dumps(head)[:-1].encode() + b',"results":[' + b",".join(page) + b"]}"
        return Response(body, status=200, mimetype="application/json")
