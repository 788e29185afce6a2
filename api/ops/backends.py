"""Which job store a server uses: the state Redis when there is one, else the embedded one."""

from __future__ import annotations

from pathlib import Path

from kalah_core.databases import cache_dir

from ..base.config import Settings
from ..jobs.embedded_jobs import EmbeddedJobStore
from ..jobs.redis_jobs import job_store
from ..jobs.store import JobStore


def make_job_store(settings: Settings) -> JobStore:
    """Jobs in the state Redis (``KALAH_STATE_REDIS_URL``, else ``KALAH_REDIS_URL``; run by
    ``kalah worker``), or without one in the embedded store beside the answers (run by the
    server's own processes)."""
    if settings.state_url:
        return job_store(settings, timeout_s=settings.redis_timeout_s)
    answers = Path(settings.cache_dir) if settings.cache_dir else cache_dir() / "answers"
    return EmbeddedJobStore(answers.parent / (answers.name + "-jobs"), ttl_s=settings.job_ttl_s)
