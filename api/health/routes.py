# mypy: disable-error-code="untyped-decorator"
"""``/livez``, ``/readyz`` and ``/metrics``.

``/readyz`` depends on what must work: the engine, and the state store when there is one
(API keys, jobs and rate limits live there: without it every key holder gets 503s). The
answer cache may forget and is optional: when it is down answers are still computed, so it
only degrades readiness, as batch jobs without a worker do (a 200 whose ``status`` is
``degraded``); taking every replica out of a load balancer for it (issue 33, finding 6) would
turn a slower service into none. Details never show paths, addresses or exception text (the
server log has them); ``/metrics`` is served only to ``KALAH_METRICS_ALLOW`` (loopback by
default: :mod:`api.health.access`).
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from flask import Response, current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint  # type: ignore[import-untyped]

from .. import metrics
from ..batch.store import JobStore
from ..core.problems import PROBLEMS, TYPE_PREFIX
from ..errors import problem_response
from ..schemas.answers import ProblemSchema
from ..state import make_state_client
from .access import metrics_allowed, metrics_refusal
from .schemas import LiveSchema, ReadySchema

log = logging.getLogger("kalah_service.health")

STATE_PING_TIMEOUT_S = 1.0
"""How long ``/readyz`` waits for the state store's PING (the probe's own timeout is 3 s)."""

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
        description="Ready: the engine and the state store checks passed (status ready, or "
        "degraded when the answer cache is down or batch jobs cannot run: see checks).",
    )
    @blp.alt_response(
        503,
        schema=ProblemSchema,
        content_type="application/problem+json",
        description="Not ready: the problem's checks say which failed.",
    )
    def get(self) -> Any:
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
        jobs_ok, jobs_detail = _jobs_check()
        checks = {
            "cache": {"ok": cache_ok, "detail": cache_detail},
            "engine": {"ok": engine_ok, "detail": engine_detail},
            "state": {"ok": state_ok, "detail": state_detail},
            "jobs": {"ok": jobs_ok, "detail": jobs_detail},
        }
        if engine_ok and state_ok:
            status = "ready" if cache_ok and jobs_ok else "degraded"
            return {"status": status, "backend": analyser.cache.backend, "checks": checks}
        failed = ", ".join(name for name in ("engine", "state") if not checks[name]["ok"])
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
    url = current_app.extensions["kalah"].settings.state_url
    if not url:
        return True, "no state store: no API keys, jobs in the embedded store"
    client = current_app.extensions.get("kalah_state_ping")
    if client is None:
        client = make_state_client(url, timeout_s=STATE_PING_TIMEOUT_S)
        current_app.extensions["kalah_state_ping"] = client
    try:
        client.ping()
    except (redis.RedisError, OSError) as error:
        log.warning("readyz: the state store is unreachable: %s: %s", type(error).__name__, error)
        return False, "the state store is unreachable (the server log has the error)"
    return True, "the state store answers"


def _jobs_check() -> tuple[bool, str]:
    """Whether batch jobs can run now: a worker alive (Redis), or this server's processes.
    No worker only degrades readiness (analyses are served; a new job is refused with a 503)."""
    store: JobStore = current_app.extensions["kalah_jobs"]
    try:
        workers = store.workers()
        stalled = store.stalled()
        if stalled is not None:
            return False, f"{stalled}; {store.unfinished()} unfinished jobs"
    except (redis.RedisError, OSError) as error:
        log.warning("readyz: the job queue is unreachable: %s: %s", type(error).__name__, error)
        return False, "the job queue is unreachable (the server log has the error)"
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
