"""The service's endgame databases: off, a file or a folder, or ``auto``: whatever the cache
folder holds, and every preset's missing database built in the background once per machine."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

import pytest

from kalah_core import Position, Rules, databases, egdb
from kalah_core.solver import Engine
from kalah_service import create_app
from kalah_service.base.config import load_settings
from kalah_service.core.endgames import (
    LOCK_NAME,
    DatabaseService,
    _build_once,
    choose_sizes,
    plan,
)


def test_off_attaches_nothing() -> None:
    engine = Engine(1)
    DatabaseService("off", 24).attach_to(engine, threading.Lock())
    assert engine.databases == []


def test_a_file_and_a_folder_are_attached(tmp_path: Path) -> None:
    rules = Rules(houses=3)
    small = egdb.default_path(rules, 4, tmp_path)
    path = egdb.default_path(rules, 6, tmp_path)
    egdb.build(small, rules, 4, progress=False)
    egdb.build(path, rules, 6, progress=False)
    for setting in (str(path), str(tmp_path)):
        engine = Engine(1)
        DatabaseService(setting, 24).attach_to(engine, threading.Lock())
        assert [d.path for d in engine.databases] == [path]  # the largest of its rules


def test_attached_databases_are_read_into_the_page_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = Rules(houses=3)
    path = egdb.default_path(rules, 6, tmp_path)
    egdb.build(path, rules, 6, progress=False)
    warmed: list[Path] = []
    monkeypatch.setattr(egdb.EndgameDatabase, "preload", lambda self: warmed.append(self.path))
    DatabaseService(str(tmp_path), 0).start()
    assert warmed == [path]


def test_the_plan_covers_every_preset_that_can_have_a_database() -> None:
    assert [(str(p.key), p.presets) for p in plan(24)] == [
        ("h6-nonempty-either-owner", ["kalah", "kalah-pie"]),
        ("h6-nonempty-mover-owner", ["kalaha"]),
        ("h6-always-either-owner", ["piet-hein"]),
        ("h6-nonempty-mover-empty-side-majority72", ["kalah-ru"]),  # kgp's 8x8: none
    ]


GB = 10**9
KEYS = [p.key for p in plan(24) if not p.key.total]


@pytest.mark.parametrize(
    ("memory", "disk", "cores", "sizes"),
    [
        # radix sizes (10 % escapes planned): 28 seeds is a 2.9 GB file, 3.7 GB while it builds
        (24 * 2**30, 76 * GB, 2, [28, 26, 26]),  # this machine: 5.7 GB of disk, 196 s
        (256 * 2**30, 10_000 * GB, 64, [28, 26, 26]),  # 30 seeds would take ~10 min: not "auto"
        (24 * 2**30, 76 * GB, 1, [26, 26, 26]),  # 28 seeds: 391 s on one core, 26: 190 s
        (8 * 2**30, 76 * GB, 1, [26, 26, 26]),
        (8 * 2**30, 76 * GB, 2, [28, 26, 26]),  # 28 seeds' build (3.7 GB) in half of 8 GiB
        (8 * 2**30, 76 * GB, 8, [28, 26, 26]),
        (4 * 2**30, 76 * GB, 2, [26, 26, 26]),  # 26 seeds' build: 1.8 GB of 2.1
        (2 * 2**30, 76 * GB, 2, [24, 24, 24]),  # 24 seeds' build: 0.85 GB of 1.07
        (1 * 2**30, 76 * GB, 2, [22, 22, 22]),
        (24 * 2**30, 10 * GB, 2, [26, 26, 26]),  # 28+26+26 (5.7 GB) > 5 GB, 26 x 3 (4.2) fits
        (2**20, 76 * GB, 2, [0, 0, 0]),  # not even 16 seeds: none
    ],
)
def test_auto_sizes_the_databases_for_the_machine(
    memory: int, disk: int, cores: int, sizes: list[int]
) -> None:
    assert choose_sizes(KEYS, memory, disk, cores) == sizes


def test_a_number_sizes_every_database_and_0_builds_none() -> None:
    assert [p.seeds for p in plan(26)] == [26, 26, 26, 16]  # majority: 16 at most
    assert [p.seeds for p in plan(12)] == [12, 12, 12, 12]
    assert plan(None)[-1].seeds == 16
    assert DatabaseService("auto", 0).plan == []
    assert [p.seeds for p in DatabaseService("off", None).plan] == []
    assert load_settings(environ={}).egdb_seeds is None  # auto is the default
    assert load_settings(environ={"KALAH_EGDB_SEEDS": "auto"}).egdb_seeds is None
    assert load_settings(environ={"KALAH_EGDB_SEEDS": "20"}).egdb_seeds == 20
    assert load_settings(environ={"KALAH_EGDB_SEEDS": "32"}).egdb_seeds == 32  # radix: 11 GB
    for bad in ("big", "33", "-1"):
        with pytest.raises(ValueError, match="KALAH_EGDB_SEEDS"):
            load_settings(environ={"KALAH_EGDB_SEEDS": bad})


def wait_attached(service: DatabaseService, count: int) -> None:
    while len(service.status()["attached"]) < count:  # pytest-timeout guards a hang
        time.sleep(0.05)


def test_a_waiting_build_stops_waiting_once_its_file_is_there(tmp_path: Path) -> None:
    path = tmp_path / "kalah-egdb-h6-nonempty-either-owner-n4.egdb"
    done = threading.Event()

    def build() -> None:
        _build_once(tmp_path, path, "kalah", 4)
        done.set()

    with open(tmp_path / LOCK_NAME, "a") as held:  # another process building another file
        fcntl.flock(held, fcntl.LOCK_EX)
        threading.Thread(target=build, daemon=True).start()
        assert not done.wait(0.5), "it waits while the file is missing"
        path.write_bytes(b"built by the holder")
        assert done.wait(120), "and returns once it is there, the lock still held"
    assert path.read_bytes() == b"built by the holder"


def test_rules_report_the_databases_and_the_book(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    rules = Rules(houses=6)
    egdb.build(egdb.default_path(rules, 6, databases.cache_dir()), rules, 6, progress=False)
    app = create_app({"TESTING": True, "KALAH_EGDB_PATH": "auto", "KALAH_EGDB_SEEDS": 0})
    answer = app.test_client().get("/v1/rules").get_json()
    found = answer["databases"]
    assert found["setting"] == "auto" and found["build_seeds"] == 0 and found["builds"] == []
    assert [(d["rules"], d["max_seeds"]) for d in found["attached"]] == [
        ("h6-nonempty-either-owner", 6)
    ]
    assert {s["rules"] for s in answer["book"]} >= {
        "h6-nonempty-either-owner",
        "h6-nonempty-mover-owner",
    }
    deep = {s["rules"]: s for s in answer["deep_book"]}
    assert set(deep) == {"piet-hein", "kalah-ru", "kgp"}  # kgp: its 6x6 board
    for section in deep.values():
        assert section["sowings"] >= 1 and section["positions"] > 1
        assert section["start_lower"] < section["start_upper"]


def test_a_database_that_appears_in_the_folder_is_attached(tmp_path: Path) -> None:
    """rescan (every RESCAN_S in each process) attaches a new or larger database, and keeps
    trying a file that cannot be opened yet (still being copied)."""
    rules = Rules(houses=3)
    small = egdb.default_path(rules, 4, tmp_path)
    egdb.build(small, rules, 4, progress=False)
    service = DatabaseService(str(tmp_path), 0)
    engine, lock = Engine(1), threading.Lock()
    service.attach_to(engine, lock)
    assert [d.max_seeds for d in engine.databases] == [4]
    assert service.rescan() == []  # nothing new
    built = tmp_path / "elsewhere.egdb"
    egdb.build(built, rules, 6, progress=False)
    copied = egdb.default_path(rules, 6, tmp_path / "folder")
    copied.parent.mkdir()
    service = DatabaseService(str(copied.parent), 0)
    service.attach_to(engine, lock)
    data = built.read_bytes()
    copied.write_bytes(data[: len(data) // 2])  # half copied: not yet
    assert service.rescan() == []
    copied.write_bytes(data)
    assert [d.max_seeds for d in service.rescan()] == [6]
    assert engine.searcher.database_seeds in (-1, 6)  # selected at the next search
    with lock:
        assert engine.analyse(Position((1, 0, 2), (0, 1, 1), (5, 8)), rules).exact
    assert engine.searcher.database_seeds == 6
    assert [d["max_seeds"] for d in service.status()["attached"]] == [6]


def test_a_build_attached_by_the_folder_watcher_is_reported_attached_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's watcher may attach a fresh build before the build thread opens it: the
    build's state turns to attached in the same step, never "building" beside an attached
    database (a loaded machine widened that window)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    service = DatabaseService("auto", 8)
    item = service.plan[0]
    service._started = True  # started; its build thread (not run here) is writing this item
    item.state = "building"  # as _build_missing leaves it while the file is written
    rules = Rules.preset(item.presets[0])
    path = egdb.default_path(rules, item.seeds, tmp_path)
    egdb.build(path, rules, item.seeds, progress=False)
    service._attach(egdb.EndgameDatabase.open(path, rules))
    status = service.status()
    assert [db["rules"] for db in status["attached"]] == [str(item.key)]
    assert status["builds"][0]["state"] == "attached"


def test_every_worker_reports_the_builds_own_duration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47: ``/v1/rules`` reported a build's seconds from whichever worker answered
    (1,121.6, 632.6 or null for one 1,605 s build): each worker timed its own part, the one
    that built from before its wait for the lock, another its wait, one that found the file
    nothing. The build records its duration beside its file; every worker reports that."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "kalah"
    recorded = {}
    for item in plan(4):  # built by another process of the machine before these start
        rules = Rules.preset(item.presets[0])
        stats = egdb.build(egdb.default_path(rules, 4, folder), rules, 4, progress=False)
        recorded[str(item.key)] = round(stats.seconds, 1)
    # Two services stand for two worker processes of one machine.
    for service in (DatabaseService("auto", 4), DatabaseService("auto", 4)):
        builds = service.status()["builds"]
        assert {b["state"] for b in builds} == {"attached"}
        assert {b["rules"]: b["seconds"] for b in builds} == recorded
    # A file without its build's record (copied in, or built before records) says null.
    for item in plan(4):
        egdb.build_record_path(egdb.default_path(Rules.preset(item.presets[0]), 4, folder)).unlink()
    assert {b["seconds"] for b in DatabaseService("auto", 4).status()["builds"]} == {None}
