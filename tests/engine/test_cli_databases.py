"""Databases and the book from the command line: one place (KALAH_EGDB_PATH, auto = the cache
folder) where ``kalah egdb build`` writes and every command looks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kalah_core.cli import main


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_egdb_build_writes_to_the_cache_folder_and_solve_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("KALAH_EGDB_PATH", "auto")
    position = "2102-3-0111-2-s"
    rules = ("--houses", "4", "--seeds", "3")
    # One thread: node counts are only reproducible in a serial search.
    serial = ("--no-book", "--threads", "1")
    without = run_json(capsys, "solve", position, *rules, *serial)
    built = run_json(capsys, "egdb", "build", *rules[:2], "--seeds", "8", "--quiet")
    assert Path(built["path"]).parent == tmp_path / "kalah"
    with_db = run_json(capsys, "solve", position, *rules, *serial)
    assert with_db["value"] == without["value"] and with_db["exact"]
    assert with_db["nodes"] < without["nodes"]
    monkeypatch.setenv("KALAH_EGDB_PATH", "off")
    assert run_json(capsys, "solve", position, *rules, *serial)["nodes"] == without["nodes"]


def test_book_build_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "book.bin"
    rules = ("--houses", "3", "--seeds", "2")
    built = run_json(capsys, "book", "build", *rules, "--depth", "3", "-o", str(path))
    assert (built["rules"], built["depth"]) == ("h3-nonempty-either-owner", 3)
    run_json(
        capsys, "book", "build", *rules, "--capture", "always", "--depth", "2", "-o", str(path)
    )
    info = run_json(capsys, "book", "info", str(path))
    assert [(s["rules"], s["depth"]) for s in info["sections"]] == [
        ("h3-nonempty-either-owner", 3),
        ("h3-always-either-owner", 2),
    ]


def test_solve_start_is_exact_at_once_from_the_shipped_book(
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer = run_json(capsys, "solve", "start")
    assert (answer["value"], answer["exact"]) == (8, True)
    assert answer["book"] is not None and answer["nodes"] == 0  # no search: at once
