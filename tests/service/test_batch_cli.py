"""``kalah batch``: locally on two processes (JSONL and CSV in) and against gunicorn over real
HTTP with a real worker; every line equals the single-position answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from test_batch_workers import start_worker

from kalah_core.cli import main
from kalah_service.batch.remote import MAX_OUTSTANDING, run_remote
from kalah_service.batch.store import MAX_UNFINISHED_JOBS
from kalah_service.keys import make_key_store

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"houses": 3, "seeds": 2}
VOLATILE = ("cached", "nodes", "time_ms", "pv")


def items(count: int) -> list[dict[str, Any]]:
    return [
        {"position": {"south": [i % 3, 1, 2], "north": [1, (i // 3) % 3, 1], "stores": [i, 0]}}
        for i in range(count)
    ]


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in VOLATILE}


@pytest.mark.system
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


def test_local_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.csv"
    source.write_text(
        'position,rules,time_ms\nstart,kalaha,100\n012-0-101-0-s,"{""houses"": 3}",\n'
    )
    assert main(["batch", str(source), "--quiet", "--workers", "1"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["position"] for line in lines] == ["333333-0-333333-0-s", "012-0-101-0-s"]
    # An exact answer already in this process's cache is served whatever the limits.
    assert lines[0]["cached"] or lines[0]["limits"]["time_ms"] == 100
    assert lines[1]["rules"]["houses"] == 3
    bad = tmp_path / "bad.csv"
    bad.write_text("pos\nstart\n")
    assert main(["batch", str(bad), "--quiet"]) == 2
    assert "position" in capsys.readouterr().err


@pytest.mark.system
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
        key, _ = make_key_store(redis_server.url, timeout_s=2.0).create("standard")
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


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("items.jsonl", '{"position": "start"}\n{"rules": "kalah"}\n', "positions.1.position"),
        ("items.jsonl", '"start"\n7\n', "positions.1"),
        ("items.jsonl", '"start"\n{nope\n', "line 2 is not JSON"),
        ("items.csv", "position,time_ms\nstart,abc\n", "CSV line 2"),
        ("items.csv", 'position,rules\nstart,"{nope"\n', "CSV line 2"),
    ],
)
def test_malformed_input_files_name_the_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    source = tmp_path / name
    source.write_text(text)
    assert main(["batch", str(source), "--quiet", "--workers", "1"]) == 2
    assert message in capsys.readouterr().err


def test_the_client_keeps_within_the_servers_limit_of_unfinished_jobs() -> None:
    assert MAX_OUTSTANDING == MAX_UNFINISHED_JOBS
