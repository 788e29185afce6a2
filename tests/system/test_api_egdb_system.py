"""The system tests of tests/service/test_api_egdb.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import fcntl
import logging
import threading
from pathlib import Path

import pytest
from test_api_egdb import wait_attached

from kalah_core import Position, Rules, databases, egdb
from kalah_core.solver import Engine
from kalah_service.core.endgames import LOCK_NAME, DatabaseService, Planned, plan


def test_auto_builds_every_preset_once_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    caplog.set_level(logging.INFO, logger="kalah_service.core.endgames")
    # Two services stand for two worker processes of one machine.
    services = [DatabaseService("auto", 8), DatabaseService("auto", 8)]
    engine, lock = Engine(16), threading.Lock()
    folder = tmp_path / "kalah"
    folder.mkdir()
    started = threading.Event()

    def start() -> None:
        services[0].attach_to(engine, lock)
        services[1].start()
        started.set()

    # Nothing waits for the builds: the services start while another process holds the
    # build lock, so no build can even begin.
    with open(folder / LOCK_NAME, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        threading.Thread(target=start, daemon=True).start()
        assert started.wait(120), "starting waited for the builds"
        assert len(engine.databases) == 0 and not services[0].status()["attached"]
    for service in services:
        wait_attached(service, 4)
        assert {b["state"] for b in service.status()["builds"]} == {"attached"}
    built = [r for r in caplog.records if "building the endgame database" in r.getMessage()]
    assert len(built) == 4, "each database is built once"
    assert databases.cache_dir() == folder
    assert sorted(p.name for p in folder.glob("*.egdb")) == sorted(
        egdb.default_path(Rules.preset(p.presets[0]), 8).name for p in plan(8)
    )
    # The engine got them as they came, and answers the same as without them.
    assert len(engine.databases) == 4
    rules = Rules.preset("kalaha")
    position = Position((0, 3, 1, 0, 2, 0), (1, 0, 2, 2, 0, 1), (14, 13))
    with lock:
        with_db = engine.analyse(position, rules)
    without = Engine(16).analyse(position, rules)
    assert with_db.exact and without.exact
    assert [(m.move, m.value) for m in with_db.moves] == [(m.move, m.value) for m in without.moves]
    assert with_db.nodes < without.nodes


def test_a_build_reports_its_progress_to_every_process(tmp_path: Path) -> None:
    """The build writes progress and ETA to a file beside its database; a service reports
    them for a build running anywhere on the machine, and 1.0 once attached."""
    rules = Rules.preset("kalah")
    service = DatabaseService(str(tmp_path), 0)
    item = Planned(egdb.rule_key(rules), ["kalah"], 18)
    service.plan = [item]
    path = egdb.default_path(rules, item.seeds, tmp_path)
    assert service._progress(item) == {"progress": 0.0, "eta_s": None}
    seen: list[tuple[float, float | None]] = []
    lines: list[str] = []
    done = threading.Event()

    def run() -> None:
        egdb.build(path, rules, 18, progress=False, threads=1, progress_file=True, log=lines.append)
        done.set()

    item.state = "building"
    threading.Thread(target=run, daemon=True).start()
    while not done.wait(0.2):
        found = service._progress(item)
        seen.append((found["progress"] or 0.0, found["eta_s"]))
    assert not egdb.progress_path(path).exists(), "removed at the end"
    moving = [p for p, _ in seen if 0 < p < 1]
    assert len(set(moving)) >= 2, seen  # it moved while the build ran
    assert moving == sorted(moving)
    assert any(eta is not None and eta > 0 for _, eta in seen)
    assert len(lines) == 19 and lines[-1].startswith(f"{path.name}: level 18/18 done, 100.0%")
    # Built, not yet attached (the file is there, its progress file gone): done, not 0.
    assert service._progress(item) == {"progress": 1.0, "eta_s": 0.0}
    item.state = "attached"
    assert service._progress(item) == {"progress": 1.0, "eta_s": 0.0}
