"""``POST /v1/batch``, ``GET`` and ``DELETE /v1/jobs/{id}``: thin routes over
:mod:`kalah_service.jobs.items`,
:mod:`kalah_service.jobs.runner` and a :class:`~kalah_service.jobs.store.JobStore`.

A small batch is answered inline; a larger one becomes a job (202 with ``Location``) for the
``kalah worker`` processes on the API's Redis, or without Redis for the server's own
processes (:mod:`kalah_service.jobs.embedded_jobs`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from flask import Response, current_app, json, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from ..base.config import BATCH_PAGE_MAX, MAX_BATCH_BODY_BYTES
from ..core.analyser import Analyser
from ..core.problems import ApiProblem
from ..edge.bounds import stop_reading
from ..edge.callers import Caller, current_caller, require_key
from ..edge.charging import charge_batch, payer
from ..edge.http_errors import document_problems
from ..jobs.items import Batch as ParsedBatch
from ..jobs.items import inline_ok, parse_batch
from ..jobs.runner import answer_all, start_in_server
from ..jobs.store import MAX_UNFINISHED_JOBS, UNFINISHED, JobStatus, JobStore
from ..ratelimit.buckets import Buckets
from ..ratelimit.costs import FREE_BODY_BYTES, search_cost
from .batch_answer import BatchAnswer
from .schemas import (
    BatchAnswerSchema,
    BatchBody,
    BatchRequestSchema,
    JobAcceptedSchema,
    JobQuery,
    JobQuerySchema,
    JobSchema,
    JobStatusAnswerSchema,
)

blp = Blueprint(
    "batch",
    __name__,
    url_prefix="/v1",
    description="Many positions at once: small batches inline, large ones as jobs run by "
    "workers (kalah worker) sharing the API's Redis.",
)

log = logging.getLogger("kalah_service.batch")

NDJSON = "application/x-ndjson"
DEFAULT_PAGE = 100
STREAM_PAGE = 500

RETRY_AFTER_S = 5
"""What a 503 about the job store tells the client to wait (Retry-After)."""

ERRORS = {
    400: "A malformed body (not JSON).",
    413: f"The body is above {MAX_BATCH_BODY_BYTES} bytes.",
    422: "A malformed item (field positions.<i>.<field>), invalid shared rules or limits, too "
    "many positions or too much budget.",
    503: "The job store (Redis) is not reachable, or no batch worker is alive to run a job "
    "(nothing is charged; see Retry-After).",
}

JOB_ERRORS = {
    404: "No such job of this caller (its API key; without Redis, its address): unknown, "
    "expired, or another's.",
    422: "A bad offset or limit (1 to 1000).",
    503: "The job store (Redis) is not reachable or timed out (see Retry-After).",
}

CANCEL_ERRORS = {
    404: JOB_ERRORS[404],
    503: JOB_ERRORS[503],
}


def _analyser() -> Analyser:
    result: Analyser = current_app.extensions["kalah"]
    return result


def _owner(caller: Caller, store: JobStore) -> str | None:
    """Whose a job is: the API key's; when the server runs its jobs itself (no Redis, no keys
    needed), the caller's address without a key."""
    return caller.identity if store.in_server and caller.key_id is None else caller.key_id


def _jobs() -> JobStore:
    store: JobStore = current_app.extensions["kalah_jobs"]
    if store.in_server:  # this process runs queued chunks too
        buckets: Buckets | None = current_app.extensions.get("kalah_limits")

        def bill(payer_text: str, search_ms: float) -> None:
            if buckets is not None:
                buckets.charge_later(payer_text, search_ms)

        start_in_server(store, _analyser(), bill)
    return store


@contextlib.contextmanager
def _store_errors(store: JobStore) -> Iterator[None]:
    """The job store failing (unreachable, answering errors, timing out, full, locked, corrupt)
    is a 503 problem with Retry-After, never a 500."""
    try:
        yield
    except store.errors as error:
        log.warning("the job store failed: %s: %s", type(error).__name__, error)
        raise ApiProblem(
            "not-ready",
            "the job store is unavailable or did not answer in time; try again later",
            headers={"Retry-After": str(RETRY_AFTER_S)},
        ) from None


def _no_worker(store: JobStore) -> ApiProblem | None:
    """The 503 of a job no worker would run (nothing charged), or None."""
    with _store_errors(store):
        stalled = store.stalled()
    if stalled is None:
        return None
    return ApiProblem(
        "not-ready",
        f"a job cannot run now: {stalled}",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


@blp.before_request
def _refuse_unrunnable_bodies() -> None:
    """A batch body above the free size can only be a job: with no worker alive it is refused
    before it is read (a 503 costs nothing, so reading and parsing it must not happen)."""
    if request.method != "POST" or (request.content_length or 0) <= FREE_BODY_BYTES:
        return
    store: JobStore = current_app.extensions["kalah_jobs"]
    try:
        refusal = _no_worker(store)
    except ApiProblem:
        stop_reading()
        raise
    if refusal is not None:
        stop_reading()
        raise refusal


def _inline(batch: ParsedBatch) -> Response:
    # Each search is charged to the caller as it runs (the analyser's meter).
    answers = [answered.body for answered in answer_all(_analyser(), batch.tasks)]
    return BatchAnswer(batch.assemble(answers)).response()


def _job_json(status: JobStatus, store: JobStore) -> dict[str, Any]:
    return {
        "id": status.id,
        "status": status.status,
        "progress": {"done": status.done, "total": status.total},
        "error": status.error,
        "warning": _stalled(store) if status.status in UNFINISHED else None,
    }


def _stalled(store: JobStore) -> str | None:
    """Why the job cannot advance now (no batch worker alive), or None."""
    try:
        return store.stalled()
    except store.errors as error:  # the answer's other fields came through: say so
        log.warning("could not count the batch workers: %s", error)
        return None


def _own_job(store: JobStore, job_id: str) -> JobStatus:
    """The caller's job ``job_id``: to anyone else (and when there is none) a 404 problem."""
    with _store_errors(store):
        status = store.status(job_id)
    owner = _owner(current_caller(), store)
    if status is None or owner is None or status.owner != owner:
        raise ApiProblem(
            "not-found", f"no job {job_id} of this caller (unknown or expired)", field="job_id"
        )
    return status


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
    def post(self, data: BatchBody) -> Response:
        """Analyse many positions: each item is a position with optional rules and limits of
        its own (overriding the batch's `rules` and `limits`). Items are analysed exactly as
        `POST /v1/analysis` analyses one (same cache, same answer); repeated items are
        computed once. An item that cannot be analysed gets a problem object in its slot.

        At most `KALAH_BATCH_INLINE_MAX` items whose budgets add up to at most
        `KALAH_MAX_TIME_MS` are answered inline; a larger batch is a job (202, `Location:
        /v1/jobs/{id}`) run by `kalah worker` processes, or without Redis by the server's own
        processes. A job costs 1 unit per started 100 items when posted, then the search its
        chunks actually run, charged as each search ends; the bucket must hold the first
        chunk's budget. A caller may have 4 jobs queued or running at once (a 429 beyond);
        with no batch worker alive a job is refused with a 503, charged nothing."""
        settings = _analyser().settings
        batch = parse_batch(settings, data["positions"], data.get("rules"), data.get("limits"))
        if inline_ok(settings, batch):
            return _inline(batch)
        store = _jobs()
        if not store.in_server:
            require_key()  # jobs in Redis belong to API keys (which live there)
        # Refused before anything is charged when no worker would run it.
        refusal = _no_worker(store)
        if refusal is not None:
            raise refusal
        # A job pays 1 unit per item (bad ones too) now, and its searches as its chunks finish
        # (the CPU they spent, charged to the caller's bucket by the runner); the bucket must
        # hold the first chunk's budget. With Redis it needs an API key (keys live there);
        # without, it belongs to the caller's address.
        owner = _owner(current_caller(), store)
        if owner is not None:
            with _store_errors(store):
                unfinished = store.unfinished_of(owner)
            if unfinished >= MAX_UNFINISHED_JOBS:
                raise ApiProblem(
                    "rate-limited",
                    f"{unfinished} jobs of this caller are queued or running, the most at once: "
                    "wait for one to finish, or cancel one (DELETE /v1/jobs/{id})",
                    headers={"Retry-After": str(RETRY_AFTER_S)},
                    max=MAX_UNFINISHED_JOBS,
                )
        chunks = batch.chunks(settings.batch_chunk)
        first = sum(search_cost(t["limits"]["time_ms"]) for t in chunks[0].tasks) if chunks else 0
        charge_batch(len(batch.slots), first, need_key=not store.in_server)
        assert owner is not None  # charge_batch required a key
        with _store_errors(store):
            status = store.create(batch, settings.batch_chunk, owner=owner, payer=payer())
        location = url_for("batch.Job", job_id=status.id)
        return Response(
            json.dumps({**_job_json(status, store), "location": location}),
            status=202,
            mimetype="application/json",
            headers={"Location": location},
        )


def _ndjson(
    first: list[bytes], store: JobStore, job_id: str, offset: int, end: int
) -> Iterator[bytes]:
    yield b"".join(line + b"\n" for line in first)
    for start in range(offset + len(first), end, STREAM_PAGE):
        try:
            page = store.results(job_id, start, min(STREAM_PAGE, end - start))
        except store.errors as error:  # the status line was sent
            log.warning("job %s: streaming its results stopped: %s", job_id, error)
            return
        if not page:
            return
        yield b"".join(line + b"\n" for line in page)


@blp.route("/jobs/<string(length=32):job_id>")
class Job(MethodView):
    @blp.arguments(JobQuerySchema(), location="query", as_kwargs=False)
    @blp.response(200, JobSchema, description="The job's status, progress and a page of results.")
    @document_problems(blp, JOB_ERRORS)
    def get(self, args: JobQuery, job_id: str) -> Response:
        """A batch job: its status (queued, running, finished, failed, cancelled), its
        progress and a page of its results in input order (`offset`, `limit`; `next` links
        the following page). With `Accept: application/x-ndjson` the results are streamed one
        JSON value per line (every result from `offset` on unless `limit` is given) and the
        status is in the headers `Kalah-Job-Status` and `Kalah-Job-Progress` (done/total)."""
        store = _jobs()
        status = _own_job(store, job_id)
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
        # An offset past the last slot is an empty page, read from no store: the stores'
        # own ranges differ (Redis's are 64-bit), the answer does not.
        past_end = offset >= status.total
        if wanted == NDJSON:
            end = min(status.total, offset + (status.total if limit is None else limit))
            with _store_errors(store):  # the first page before the status line: a 503 still
                first = (
                    []
                    if past_end
                    else store.results(job_id, offset, min(STREAM_PAGE, max(0, end - offset)))
                )
            return Response(
                _ndjson(first, store, job_id, offset, end),
                mimetype=NDJSON,
                headers={
                    "Kalah-Job-Status": status.status,
                    "Kalah-Job-Progress": f"{status.done}/{status.total}",
                },
            )
        limit = DEFAULT_PAGE if limit is None else limit
        with _store_errors(store):
            page = [] if past_end else store.results(job_id, offset, limit)
            head = {**_job_json(status, store), "offset": offset, "limit": limit}
        following = offset + limit
        next_url = (
            url_for("batch.Job", job_id=job_id, offset=following, limit=limit)
            if following < status.total
            else None
        )
        head["next"] = next_url
        return BatchAnswer(page, head).response()

    @blp.response(
        200,
        JobStatusAnswerSchema,
        description="The job after cancelling: cancelled, or finished or failed already.",
    )
    @document_problems(blp, CANCEL_ERRORS)
    def delete(self, job_id: str) -> Response:
        """Cancel a job of this caller: its waiting chunks are dropped, its running ones stop
        after their current search (charged, like every search the job ran), nothing more is
        run, and the results so far stay readable (`GET`, counted in `progress.done`) until
        the job expires. A finished or failed job stays as it is."""
        store = _jobs()
        _own_job(store, job_id)
        with _store_errors(store):
            status = store.cancel(job_id)
        if status is None:  # expired in between
            raise ApiProblem(
                "not-found", f"no job {job_id} of this caller (unknown or expired)", field="job_id"
            )
        return Response(
            json.dumps(_job_json(status, store)), status=200, mimetype="application/json"
        )
