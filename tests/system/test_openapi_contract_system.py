"""The system tests of tests/service/test_openapi_contract.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flask.testing import FlaskClient
from test_openapi_contract import ANONYMOUS, CONFIG, LIVE_EXAMPLE, USAGE

if TYPE_CHECKING:
    from harness import RedisServer


def test_a_generated_client_type_checks_and_works(
    client: FlaskClient, gunicorn_server: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    """openapi-python-client from the served spec; a short script using it passes mypy
    --strict with no error and runs against gunicorn."""
    spec = tmp_path / "openapi.json"
    spec.write_text(client.get("/openapi.json").get_data(as_text=True), encoding="utf-8")
    (tmp_path / "config.yaml").write_text(CONFIG, encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    generated = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--path",
            str(spec),
            "--config",
            str(tmp_path / "config.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / "kalah_client"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    # The generator skips nothing (it skipped board.svg's image before it was also binary).
    assert "WARNING" not in generated.stdout, generated.stdout
    script = tmp_path / "usage.py"
    script.write_text(USAGE, encoding="utf-8")
    anonymous = tmp_path / "anonymous.py"
    anonymous.write_text(ANONYMOUS, encoding="utf-8")
    live = tmp_path / "live_client.py"  # docs/live.md's example, as printed there
    live.write_text(LIVE_EXAMPLE, encoding="utf-8")

    checked = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--strict", "--no-incremental"),
            *(str(script), str(anonymous), str(live)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found" in checked.stdout

    key = subprocess.run(
        [str(bin_dir / "kalah"), "keys", "create", "--tier", "premium", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KALAH_REDIS_URL": redis_server.url},
    )
    assert key.returncode == 0, key.stderr
    ran = subprocess.run(
        [sys.executable, str(script), gunicorn_server, json.loads(key.stdout)["key"]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "h3s3 2 True 2 2" in ran.stdout and "problem rules.houses" in ran.stdout
    ran = subprocess.run(
        [sys.executable, str(anonymous), gunicorn_server],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "anonymous 2 True" in ran.stdout and "review 24 True" in ran.stdout
    assert "image <svg" in ran.stdout
    ran = subprocess.run(
        [sys.executable, str(live), gunicorn_server],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("depth 1 ") and "\nanswer " in ran.stdout
