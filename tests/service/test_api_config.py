"""Configuration from environment variables (api/base/config.py) and serving helpers."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from kalah_service.base.config import ENV_NAMES, load_settings, worker_timeout_s
from kalah_service.ops.serve import CONFIG, gunicorn_command


def test_defaults() -> None:
    settings = load_settings(environ={})
    assert settings.redis_url is None
    assert settings.tt_mb == 64
    assert settings.default_time_ms == 1000
    assert settings.max_time_ms == 10000
    assert settings.egdb_path is None
    assert settings.workers >= 1
    assert settings.cache_ttl_s == 3600
    assert worker_timeout_s(settings) >= 3 * settings.max_time_ms / 1000


def test_environment_and_overrides() -> None:
    env = {
        "KALAH_REDIS_URL": "redis://r:6379/1",
        "KALAH_TT_MB": "16",
        "KALAH_MAX_TIME_MS": "2000",
        "KALAH_DEFAULT_TIME_MS": "500",
        "KALAH_WORKERS": "3",
        "KALAH_CACHE_TTL_S": "60",
        "KALAH_EGDB_PATH": "/data/kalah.egdb",
    }
    settings = load_settings(environ=env)
    assert (settings.redis_url, settings.tt_mb, settings.max_time_ms, settings.default_time_ms) == (
        "redis://r:6379/1",
        16,
        2000,
        500,
    )
    assert (settings.workers, settings.cache_ttl_s, settings.egdb_path) == (
        3,
        60,
        "/data/kalah.egdb",
    )
    assert load_settings({"KALAH_REDIS_URL": ""}, environ=env).redis_url is None
    assert load_settings({"KALAH_TT_MB": 8}, environ=env).tt_mb == 8


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KALAH_TT_MB", "lots"),
        ("KALAH_TT_MB", "0"),
        ("KALAH_MAX_TIME_MS", "-5"),
        ("KALAH_WORKERS", "0"),
        ("KALAH_DEFAULT_TIME_MS", "20000"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        load_settings(environ={name: value})


def test_every_variable_is_documented() -> None:
    """docs/config.md is generated from the table (tests/service/test_docs.py checks it is
    current)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text(encoding="utf-8")
    for name in ENV_NAMES:
        assert f"| `{name}` |" in text, name


def test_serve_runs_gunicorn_with_the_deploy_config() -> None:
    command = gunicorn_command("0.0.0.0", 8080, 3)
    assert command[1:3] == ["-m", "gunicorn"]
    assert ["-c", "python:kalah_service.ops.gunicorn_conf"] == command[3:5] == ["-c", CONFIG]
    assert "0.0.0.0:8080" in command and command[-3:] == ["-w", "3", "kalah_service.wsgi:app"]
    assert "[::1]:80" in gunicorn_command("::1", 80, None)
    assert importlib.util.find_spec("kalah_service.ops.gunicorn_conf") is not None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
