"""The system tests of tests/service/test_api_config.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests
from test_api_config import free_port


def test_serve_starts_and_stops_cleanly(tmp_path: Path) -> None:
    """``python -m kalah_service.ops.serve`` (what ``kalah serve`` runs) from an empty folder:
    answers, then stops on SIGTERM."""
    port = free_port()
    empty = tmp_path / "empty"
    empty.mkdir()
    metrics = tmp_path / "metrics"
    env = {**os.environ, "KALAH_REDIS_URL": "", "PROMETHEUS_MULTIPROC_DIR": str(metrics)}
    process = subprocess.Popen(
        [sys.executable, "-m", "kalah_service.ops.serve", "--port", str(port), "--workers", "1"],
        cwd=empty,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{port}/livez", timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stdout is not None
        output = process.stdout.read().decode()
        assert f"http://127.0.0.1:{port}/" in output and "/docs" in output
    finally:
        if process.poll() is None:
            process.kill()
