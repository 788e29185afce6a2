"""Run the API under gunicorn with ``deploy/gunicorn.conf.py`` (the ``kalah serve`` command)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

CONFIG_PATH = Path(__file__).resolve().parent.parent / "deploy" / "gunicorn.conf.py"


def gunicorn_command(host: str, port: int, workers: int | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        str(CONFIG_PATH),
        "-b",
        f"{_bind_host(host)}:{port}",
    ]
    if workers is not None:
        command += ["-w", str(workers)]
    return [*command, "api.wsgi:app"]


def _bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def serve(host: str, port: int, workers: int | None) -> int:
    """Run gunicorn in the foreground until it stops; returns its exit status. ``workers``
    None means ``KALAH_WORKERS`` (default: the CPU count)."""
    if not CONFIG_PATH.exists():
        print(f"kalah serve: {CONFIG_PATH} not found (run from a source checkout)", file=sys.stderr)
        return 2
    root = str(CONFIG_PATH.parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    print(
        f"Kalah API on http://{_bind_host(host)}:{port}/ (docs: /docs, spec: /openapi.json)",
        flush=True,
    )
    process = subprocess.Popen(gunicorn_command(host, port, workers), env=env)

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
