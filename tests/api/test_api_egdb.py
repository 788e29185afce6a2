"""The service's endgame databases: a configured file or folder, off, or the default built in
the background."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from api.egdb import DEFAULT_SEEDS, attach_databases
from kalah_core import Position, Rules, egdb
from kalah_core.solver import Engine


def test_off_attaches_nothing() -> None:
    engine = Engine(1)
    attach_databases(engine, threading.Lock(), "off")
    assert engine.databases == []


def test_a_file_and_a_folder_are_attached(tmp_path: Path) -> None:
    rules = Rules(houses=3)
    path = egdb.default_path(rules, 6, tmp_path)
    egdb.build(path, rules, 6, progress=False)
    for setting in (str(path), str(tmp_path)):
        engine = Engine(1)
        attach_databases(engine, threading.Lock(), setting)
        assert [d.path for d in engine.databases] == [path]


def test_auto_builds_the_default_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    engine, lock = Engine(16), threading.Lock()
    started = time.monotonic()
    attach_databases(engine, lock, "auto")
    assert time.monotonic() - started < 1.0, "start-up does not wait for the build"
    deadline = time.monotonic() + 120
    while not engine.databases and time.monotonic() < deadline:
        time.sleep(0.1)
    rules = Rules()
    assert engine.databases and engine.databases[0].max_seeds == DEFAULT_SEEDS
    assert egdb.default_path(rules, DEFAULT_SEEDS, tmp_path / "kalah").exists()
    # Same exact answers with and without it.
    position = Position(
        (0, 3, 1, 0, 2, 5), (1, 0, 4, 2, 0, 1), (14, 15), Position.start(rules).to_move
    )
    with lock:
        with_db = engine.analyse(position, rules)
    without = Engine(16).analyse(position, rules)
    assert with_db.exact and without.exact
    assert [(m.move, m.value) for m in with_db.moves] == [(m.move, m.value) for m in without.moves]
    assert with_db.nodes < without.nodes
