# mypy: disable-error-code="untyped-decorator"
"""``/livez``, ``/readyz`` and ``/metrics``."""

from __future__ import annotations

from typing import Any

import redis
from flask import Response, current_app
from flask.views import MethodView
from flask_smorest import Blueprint  # type: ignore[import-untyped]

from .. import metrics
from ..batch.store import JobStore
from ..errors import PROBLEMS, TYPE_PREFIX, problem_response
from ..schemas import ProblemSchema
from .schemas import LiveSchema, ReadySchema

blp = Blueprint(
    "health", __name__, description="Liveness, readiness and metrics for orchestrators."
)


@blp.route("/livez")
class Live(MethodView):
    @blp.response(200, LiveSchema, description="The process answers.")
    def get(self) -> dict[str, Any]:
        """Liveness: the process answers (nothing else: a Redis outage restarts nothing)."""
        return {"status": "ok"}


@blp.route("/readyz")
class Ready(MethodView):
    @blp.response(
        200,
        ReadySchema,
        description="Ready: the cache and engine checks passed (status ready, or degraded "
        "when batch jobs cannot run: see checks.jobs).",
    )
    @blp.alt_response(
        503,
        schema=ProblemSchema,
        content_type="application/problem+json",
        description="Not ready: the problem's checks say which failed.",
    )
    def get(self) -> Any:
        """Readiness: Redis reachable (when configured) and the engine self-test passed.

        The service still answers analyses while Redis is down (by computing); this says so,
        and becomes ready again by itself when Redis is back. When batch jobs cannot run (no
        `kalah worker` has reported recently, or the job queue is unreachable) the answer is
        still 200, since analyses are served, with status `degraded` and the `jobs` check
        saying why."""
        analyser = current_app.extensions["kalah"]
        cache_ok, cache_detail = analyser.cache.ping()
        engine_ok, engine_detail = analyser.self_test()
        jobs_ok, jobs_detail = _jobs_check()
        checks = {
            "cache": {"ok": cache_ok, "detail": cache_detail},
            "engine": {"ok": engine_ok, "detail": engine_detail},
            "jobs": {"ok": jobs_ok, "detail": jobs_detail},
        }
        if cache_ok and engine_ok:
            status = "ready" if jobs_ok else "degraded"
            return {"status": status, "backend": analyser.cache.backend, "checks": checks}
        failed = ", ".join(name for name, check in checks.items() if not check["ok"])
        problem = PROBLEMS["not-ready"]
        return problem_response(
            503,
            problem.title,
            f"not ready: {failed}",
            type_=TYPE_PREFIX + problem.slug,
            field=None,
            checks=checks,
            headers={"Retry-After": "1"},
        )


def _jobs_check() -> tuple[bool, str]:
    """Whether batch jobs can run now: a worker alive (Redis), or this server's processes.
    No worker only degrades readiness (analyses are served; a new job is refused with a 503)."""
    store: JobStore = current_app.extensions["kalah_jobs"]
    try:
        workers = store.workers()
        stalled = store.stalled()
        if stalled is not None:
            return False, f"{stalled}; {store.unfinished()} unfinished jobs"
    except redis.RedisError as error:
        return False, f"the job queue is unreachable: {type(error).__name__}"
    if workers is None:
        return True, "jobs run by this server's processes (embedded store)"
    return True, f"{workers} batch workers alive"


@blp.route("/metrics")
class Metrics(MethodView):
    @blp.doc(
        responses={
            "200": {
                "description": "Prometheus text exposition of every worker's metrics.",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        }
    )
    def get(self) -> Response:
        """Prometheus metrics, aggregated over every gunicorn worker."""
        body, content_type = metrics.render()
        return Response(body, mimetype=None, content_type=content_type)
