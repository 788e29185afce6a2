"""The system tests of tests/service/test_batch_cli.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from test_batch_cli import SMALL, items, stable
from test_batch_workers import start_worker

from kalah_core.cli import main
from kalah_service.jobs.remote import run_remote
from kalah_service.stores.redis_keys import RedisKeyStore


def test_local_jsonl_on_two_processes(
    tmp_path: Path, client: FlaskClient, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = [*items(40), {"position": "start", "rules": "kalaha"}, *items(3)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(i) + "\n" for i in inputs) + '"bad"\n\n')
    out = tmp_path / "out.jsonl"
    argv = ["batch", str(source), "-o", str(out), "--houses", "3", "--seeds", "2"]
    assert main([*argv, "--time-ms", "200", "--workers", "2", "--quiet"]) == 0
    assert "45 positions in" in capsys.readouterr().out
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[40]["position"] == "333333-0-333333-0-s" and lines[40]["rules"]["seeds"] == 3
    assert [line["cached"] for line in lines[41:44]] == [True] * 3, "repeats of items 0-2"
    assert lines[44]["field"] == "positions.44.position"
    for item, line in zip(inputs[:40], lines[:40], strict=True):
        single = client.post(
            "/v1/analysis", json={"rules": SMALL, "limits": {"time_ms": 200}, **item}
        ).json
        assert stable(line) == stable(single)


def test_against_gunicorn_with_a_worker(
    gunicorn_server: str,
    redis_server: Any,
    client: FlaskClient,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    redis_server.flush()  # answers cached by earlier tests would carry other limits
    inputs = items(120)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(i) + "\n" for i in inputs))
    out = tmp_path / "out.jsonl"
    worker = start_worker(redis_server.url, tmp_path / "worker.log")
    try:
        key, _ = RedisKeyStore(redis_server.url, timeout_s=2.0).create("standard")
        argv = ["batch", str(source), "-o", str(out), "--houses", "3", "--seeds", "2"]
        argv += ["--time-ms", "200", "--server", gunicorn_server, "--quiet"]
        # Without a key (a job needs one here) the batch goes in pieces answered inline.
        assert main(argv) == 0
        inline = out.read_text()
        assert main([*argv, "--key", key]) == 0  # one job
        # In 12 jobs of 10: more than a caller may have unfinished at once, so the client
        # waits for the oldest before it posts the next.
        pieces = run_remote(gunicorn_server, inputs, SMALL, {"time_ms": 200}, piece=10, key=key)
    finally:
        worker.terminate()
        worker.wait(10)
    assert "120 positions in" in capsys.readouterr().out
    from_job = [json.loads(line) for line in out.read_text().splitlines()]
    assert [json.loads(line) for line in pieces] == from_job
    for text in (inline, out.read_text()):
        lines = [json.loads(line) for line in text.splitlines()]
        assert len(lines) == 120
        for item, line in zip(inputs, lines, strict=True):
            single = client.post(
                "/v1/analysis", json={"rules": SMALL, "limits": {"time_ms": 200}, **item}
            ).json
            assert stable(line) == stable(single)
    # A small batch is answered inline by the server itself.
    small = tmp_path / "small.jsonl"
    small.write_text('"start"\n')
    assert main(["batch", str(small), "--server", gunicorn_server, "--houses", "3"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["position"] == "444-0-444-0-s"  # stdout: the answers only
    # stderr: the summary (and the progress bar)
    assert "1 position in " in err and f"/s) on {gunicorn_server}: 1 exact, 0 estimated" in err
    assert "0 errors -> -" in err
    assert main(["batch", str(small), "--server", gunicorn_server, "--rules", "nope"]) == 2
