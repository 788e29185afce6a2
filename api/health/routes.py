"""``/livez``, ``/readyz`` and ``/metrics``.

``/readyz`` depends on what must work: the engine, the state store when there is one (API
keys, jobs and rate limits live there: without it every key holder gets 503s), the job store
and the rate limits' counters (each probed with a write: a full disk still reads; while either
fails their routes are 503s). The answer cache may forget and is optional: when it fails
answers are still computed, served and charged, so it only degrades readiness, as batch jobs
without a worker do (a 200 whose ``status`` is ``degraded``); taking every replica out of a
load balancer for it (issue 33, finding 6) would turn a slower service into none. The policy
is docs/deploy.md's "Store faults". Details never show paths, addresses or exception text (the
server log has them); ``/metrics`` is served only to ``KALAH_METRICS_ALLOW`` (loopback by
default: :mod:`kalah_service.edge.access`).
"""

from __future__ import annotations

import logging

from flask import Response, current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint

from ..base import metrics
from ..core.problems import PROBLEMS, TYPE_PREFIX
from ..edge.access import metrics_allowed, metrics_refusal
from ..edge.http_errors import problem_response
from ..jobs.store import JobStore
from ..ratelimit.buckets import Buckets
from ..schemas.answers import ProblemSchema
from ..stores.state import StatePing
from .schemas import LiveSchema, ReadySchema

log = logging.getLogger("kalah_service.health")

blp = Blueprint(
    "health", __name__, description="Liveness, readiness and metrics for orchestrators."
)


@blp.route("/livez")
class Live(MethodView):
    @blp.response(200, LiveSchema, description="The process answers.")
    def get(self) -> dict[str, object]:
        """Liveness: the process answers (nothing else: a Redis outage restarts nothing)."""
        return {"status": "ok"}


@blp.route("/readyz")
class Ready(MethodView):
    @blp.response(
        200,
        ReadySchema,
        description="Ready: the engine and the state store checks passed (status ready, or "
        "degraded when the answer cache is down or batch jobs cannot run: see checks).",
    )
    @blp.alt_response(
        503,
        schema=ProblemSchema,
        content_type="application/problem+json",
        description="Not ready: the problem's checks say which failed.",
    )
    def get(self) -> dict[str, object] | Response:
        """Readiness: the engine self-test passed and the state store (when configured:
        keys, jobs and rate limits live there) is reachable; a 503 otherwise.

        The answer cache only degrades readiness: while its Redis is down the service still
        answers analyses (by computing), so the answer is a 200 with status `degraded` and
        the `cache` check saying so; it is `ready` again by itself when the cache is back.
        Likewise when batch jobs cannot run (no `kalah worker` has reported recently, or the
        job queue is unreachable): `degraded`, the `jobs` check saying why."""
        analyser = current_app.extensions["kalah"]
        cache_ok, cache_detail = analyser.cache.ping()
        engine_ok, engine_detail = analyser.self_test()
        state_ok, state_detail = _state_check()
        store_ok, jobs_ok, jobs_detail = _jobs_check()
        limits_ok, limits_detail = _limits_check()
        checks = {
            "cache": {"ok": cache_ok, "detail": cache_detail},
            "engine": {"ok": engine_ok, "detail": engine_detail},
            "state": {"ok": state_ok, "detail": state_detail},
            "jobs": {"ok": jobs_ok, "detail": jobs_detail},
            "limits": {"ok": limits_ok, "detail": limits_detail},
        }
        required = {"engine": engine_ok, "state": state_ok, "jobs": store_ok, "limits": limits_ok}
        if all(required.values()):
            status = "ready" if cache_ok and jobs_ok else "degraded"
            return {"status": status, "backend": analyser.cache.backend, "checks": checks}
        failed = ", ".join(name for name, ok in required.items() if not ok)
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


def _state_check() -> tuple[bool, str]:
    """Whether the state store answers a PING (no state store: nothing to check)."""
    state: StatePing | None = current_app.extensions["kalah_state"]
    if state is None:
        return True, "no state store: no API keys, jobs in the embedded store"
    try:
        state.ping()
    except state.errors as error:
        log.warning("readyz: the state store is unreachable: %s: %s", type(error).__name__, error)
        return False, "the state store is unreachable (the server log has the error)"
    return True, "the state store answers"


def _jobs_check() -> tuple[bool, bool, str]:
    """(the job store works, batch jobs can run now, why). A store that fails a write is not
    ready (every job route is a 503); no worker alive only degrades readiness (analyses are
    served; a new job is refused with a 503)."""
    store: JobStore = current_app.extensions["kalah_jobs"]
    try:
        store.probe()
        workers = store.workers()
        stalled = store.stalled()
        if stalled is not None:
            return True, False, f"{stalled}; {store.unfinished()} unfinished jobs"
    except store.errors as error:
        log.warning("readyz: the job store failed: %s: %s", type(error).__name__, error)
        return False, False, "the job store is failing (the server log has the error)"
    if workers is None:
        return True, True, "jobs run by this server's processes (embedded store)"
    return True, True, f"{workers} batch workers alive"


def _limits_check() -> tuple[bool, str]:
    """Whether the rate limits' counters take a write (while they fail, limited requests are
    503s); with limits off they are not used."""
    if current_app.extensions["kalah"].settings.limits == "off":
        return True, "rate limits off"
    buckets: Buckets = current_app.extensions["kalah_limits"]
    failure = buckets.probe()
    if failure is not None:
        return False, "the rate limits' store is failing (the server log has the error)"
    return True, "the rate limits' store answers"


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
    @blp.alt_response(
        403,
        schema=ProblemSchema,
        content_type="application/problem+json",
        description="The caller's address is not in KALAH_METRICS_ALLOW (loopback by default).",
    )
    def get(self) -> Response:
        """Prometheus metrics, aggregated over every gunicorn worker; served only to the
        networks of `KALAH_METRICS_ALLOW` (loopback by default)."""
        settings = current_app.extensions["kalah"].settings
        if not metrics_allowed(request.environ, settings.metrics_allow):
            return metrics_refusal()
        body, content_type = metrics.render()
        return Response(body, mimetype=None, content_type=content_type)
