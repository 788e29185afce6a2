"""Real servers for tests and benchmarks: ``redis-server`` and gunicorn on free loopback
ports (never a fake). ``tests/service_fixtures.py`` builds its fixtures from these, and the
benchmarks import this module (``sys.path`` gets ``tests/``), so both run the service the
same way."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kalah_service.ops.serve import gunicorn_command

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> None:
    """Poll ``check`` until it returns a true value (exceptions count as not yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def http_status(url: str, timeout: float = 1.0) -> int:
    """The status of a GET (an HTTP error status too, not an exception)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


class RedisServer:
    """A real ``redis-server`` on a fixed port that a test may stop and start again."""

    def __init__(
        self, port: int | None = None, *, persistent: bool = False, args: Sequence[str] = ()
    ) -> None:
        self.port = port or free_port()
        self.persistent = persistent  # an append-only file: the data survive a restart
        self.args = list(args)  # more redis-server options (a later option wins)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.dir = tempfile.mkdtemp(prefix="kalah-redis-")

    def start(self) -> RedisServer:
        assert self.process is None
        if shutil.which("redis-server") is None:
            raise RuntimeError(
                "redis-server is not installed (Debian: apt-get install redis-server)"
            )
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
        wait_for(self.ping, 120, f"redis-server on port {self.port}")
        return self

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

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class Gunicorn:
    """gunicorn with ``api/ops/gunicorn_conf.py`` (what ``kalah serve`` runs) on a free loopback
    port; ``env`` adds to the environment. ``log`` is its output (for tests that read worker
    boots and restarts)."""

    def __init__(self, env: Mapping[str, str], *, workers: int | None = None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.metrics_dir = tempfile.mkdtemp(prefix="kalah-metrics-")
        self.log = Path(tempfile.mkstemp(prefix="kalah-gunicorn-", suffix=".log")[1])
        self.env = {
            **os.environ,
            "KALAH_WORKERS": "2",
            "KALAH_MAX_TIME_MS": "5000",
            "KALAH_TT_MB": "64",  # the service's default (tests/conftest.py lowers the apps')
            "PROMETHEUS_MULTIPROC_DIR": self.metrics_dir,
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, ready: bool = False, timeout: float = 120) -> str:
        """Start and wait until ``/livez`` (with ``ready``: ``/readyz``) answers 200."""
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                gunicorn_command("127.0.0.1", self.port, self.workers),
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        path = "/readyz" if ready else "/livez"
        try:
            wait_for(lambda: http_status(self.base + path) == 200, timeout, "gunicorn")
        except RuntimeError:
            raise RuntimeError(f"gunicorn did not answer:\n{self.tail()}") from None
        return self.base

    def tail(self, size: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-size:]

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
