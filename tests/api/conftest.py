"""Fixtures for the API tests: apps with the in-process LRU or a real Redis, a real
``redis-server`` started on a free port (never a fake), and gunicorn serving over real HTTP."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from api import create_app
from api.serve import gunicorn_command

ROOT = Path(__file__).resolve().parents[2]

SMALL = {"rules": "kalah", "houses": 3, "seeds": 3}
"""Rules small enough for instant exact answers (query form)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


class RedisServer:
    """A real ``redis-server`` on a fixed port that a test may stop and start again."""

    def __init__(self, port: int, *, persistent: bool = False, args: Sequence[str] = ()) -> None:
        self.port = port
        self.persistent = persistent  # an append-only file: the data survive a restart
        self.args = list(args)  # more redis-server options (a later option wins)
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.dir = tempfile.mkdtemp(prefix="kalah-redis-")

    def start(self) -> None:
        assert self.process is None
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.persistent else "no",
                "--dir",
                self.dir,
                *self.args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for(self.ping, 10, f"redis-server on port {self.port}")

    def ping(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


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


@pytest.fixture
def app() -> Flask:
    """The app on the embedded default: the in-process LRU, no Redis."""
    return create_app({"TESTING": True, "KALAH_REDIS_URL": "", "KALAH_MAX_TIME_MS": 5000})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def redis_app(redis_server: RedisServer) -> Flask:
    redis_server.flush()
    return create_app({"TESTING": True, "KALAH_REDIS_URL": redis_server.url})


class Gunicorn:
    """gunicorn with ``api/gunicorn_conf.py`` on a free loopback port; ``env`` adds to the
    environment. ``log`` is its output (for tests that read worker boots and restarts)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.metrics_dir = tempfile.mkdtemp(prefix="kalah-test-metrics-")
        self.log = Path(tempfile.mkstemp(prefix="kalah-gunicorn-", suffix=".log")[1])
        self.env = {
            **os.environ,
            "KALAH_WORKERS": "2",
            "KALAH_MAX_TIME_MS": "5000",
            "PROMETHEUS_MULTIPROC_DIR": self.metrics_dir,
            "PYTHONPATH": str(ROOT),
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                gunicorn_command("127.0.0.1", self.port, None),
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait_for(
            lambda: requests.get(self.base + "/livez", timeout=1).status_code == 200,
            30,
            "gunicorn",
        )
        return self.base

    def worker_pids(self) -> set[int]:
        """The current workers (children of the master)."""
        assert self.process is not None
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return {int(pid) for pid in path.read_text().split()}

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.metrics_dir, ignore_errors=True)
        self.log.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def gunicorn_server(redis_server: RedisServer) -> Iterator[str]:
    """gunicorn with ``api/gunicorn_conf.py``, 2 workers and the session's Redis; yields the
    base URL."""
    server = Gunicorn({"KALAH_REDIS_URL": redis_server.url})
    try:
        base = server.start()
        _wait_for(lambda: requests.get(base + "/readyz", timeout=1).status_code == 200, 30, "ready")
        yield base
    finally:
        server.close()
