"""Fixtures for the service's tests in every tier (a plugin of tests/conftest.py): apps on the
embedded default or a real Redis, a real ``redis-server`` started on a free port (never a
fake), and gunicorn serving over real HTTP (the servers themselves are in
``tests/harness.py``, shared with the benchmarks)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import harness
import pytest
from flask import Flask
from flask.testing import FlaskClient

from kalah_service import create_app

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"rules": "kalah", "houses": 3, "seeds": 3}
"""Rules small enough for instant exact answers (query form)."""


free_port = harness.free_port
RedisServer = harness.RedisServer
Gunicorn = harness.Gunicorn


def _redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        # The cache tests need the real thing: a missing server is an error, never a skip.
        pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
    server = RedisServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One Redis for the session; flushed by ``redis_app`` before each test."""
    yield from _redis_server()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A Redis of this test's own, which the test may stop and restart."""
    yield from _redis_server()


def embedded_app(answers: Path) -> Flask:
    """The app on the embedded default (no Redis), with an empty answer store in ``answers``."""
    return create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": "",
            "KALAH_MAX_TIME_MS": 5000,
            "KALAH_CACHE_DIR": str(answers),
        }
    )


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    """The app on the embedded default, with an answer store of its own."""
    return embedded_app(tmp_path / "answers")


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def redis_app(redis_server: RedisServer) -> Flask:
    redis_server.flush()
    return create_app({"TESTING": True, "KALAH_REDIS_URL": redis_server.url})


@pytest.fixture(scope="session")
def gunicorn_server(redis_server: RedisServer) -> Iterator[str]:
    """gunicorn with ``api/ops/gunicorn_conf.py``, 2 workers and the session's Redis; yields the
    base URL."""
    server = Gunicorn({"KALAH_REDIS_URL": redis_server.url})
    try:
        yield server.start(ready=True)
    finally:
        server.close()
