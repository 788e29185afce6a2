"""Run the API under gunicorn with :mod:`api.gunicorn_conf` (the ``kalah serve`` command)."""

from __future__ import annotations

import signal
import subprocess
import sys
from types import FrameType

CONFIG = "python:api.gunicorn_conf"
"""gunicorn's ``-c``: the configuration module of the installed package."""


def gunicorn_command(host: str, port: int, workers: int | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        CONFIG,
        "-b",
        f"{_bind_host(host)}:{port}",
    ]
    if workers is not None:
        command += ["-w", str(workers)]
    return [*command, "api.wsgi:app"]


def _stop_with_parent() -> None:
    """In the gunicorn child, before exec: the kernel sends it SIGTERM (a clean stop of every
    worker and of their background builds) when ``kalah serve`` ends, even by SIGKILL (Linux
    ``PR_SET_PDEATHSIG``; elsewhere nothing). ``kalah serve`` has no other thread yet, so a
    ``preexec_fn`` is safe here."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def _bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def serve(host: str, port: int, workers: int | None) -> int:
    """Run gunicorn in the foreground until it stops; returns its exit status. ``workers``
    None means ``KALAH_WORKERS`` (default: the CPU count)."""
    print(
        f"Kalah API on http://{_bind_host(host)}:{port}/ (docs: /docs, spec: /openapi.json)",
        flush=True,
    )
    process = subprocess.Popen(gunicorn_command(host, port, workers), preexec_fn=_stop_with_parent)

    def forward(signum: int, frame: FrameType | None) -> None:
        process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:  # gunicorn got the SIGINT too; wait for its clean stop
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m api.serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=None)
    arguments = parser.parse_args()
    sys.exit(serve(arguments.host, arguments.port, arguments.workers))
