"""Endgame databases for the service's engines, found by :mod:`kalah_core.databases`.

Each process attaches, at its engine's creation, the largest database of each rule key that
``KALAH_EGDB_PATH`` finds. In ``auto`` mode (the default) the service also builds, in the
background and once per machine, the databases of every preset's rule key that can have one
and is still missing, most used first (``kalah``/``kalah-pie``, ``kalaha``, ``piet-hein``;
``kalah-ru``'s ``majority`` can have none), each of ``KALAH_EGDB_SEEDS`` seeds (24: 1.25 GB,
about a minute on two cores; 0: build none), and attaches each as it is ready. Answers are
the same without them, only slower; readiness does not wait.

Once per machine: a build holds an exclusive ``flock`` on ``<cache>/egdb-build.lock``; every
other process waits for it, then finds the file. The build runs in a child process at nice 10
(searches keep the CPU) that inherits the lock, so a recycled worker does not free it early.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kalah_core import databases, egdb
from kalah_core.egdb import EndgameDatabase, RuleKey
from kalah_core.rules import PRESETS
from kalah_core.solver import Engine

log = logging.getLogger(__name__)
LOCK_NAME = "egdb-build.lock"


@dataclass(slots=True)
class Planned:
    """One database the background build provides."""

    key: RuleKey
    presets: list[str]
    state: str = "queued"  # queued, building, attached, failed
    seconds: float | None = None


def plan() -> list[Planned]:
    """Every preset's rule key that can have a database, in the order of PRESETS."""
    planned: dict[RuleKey, Planned] = {}
    for name, rules in PRESETS.items():
        if rules.majority:
            continue
        key = egdb.rule_key(rules)
        planned.setdefault(key, Planned(key, [])).presets.append(name)
    return list(planned.values())


class DatabaseService:
    """This process's databases and the engines that probe them (one per process)."""

    def __init__(self, setting: str | None, seeds: int) -> None:
        self.setting = databases.setting(setting)
        self.seeds = seeds
        self.attached: dict[RuleKey, EndgameDatabase] = {}
        self.plan = plan() if self.setting == "auto" and seeds > 0 else []
        self._engines: list[tuple[Engine, threading.Lock]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = False

    def start(self) -> None:
        """Open what is there; in ``auto`` start the background builds. Once per process."""
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            for database in databases.open_best(self.setting):
                self.attached[database.key] = database
                log.info("endgame database %s found", database)
            for item in self.plan:
                if self._enough(item.key):
                    item.state = "attached"
            if any(i.state == "queued" for i in self.plan):
                self._thread = threading.Thread(
                    target=self._build_missing, name="egdb-build", daemon=True
                )
                self._thread.start()
            self._started = True

    def attach_to(self, engine: Engine, engine_lock: threading.Lock) -> None:
        """Attach every database there is to ``engine``, and the built ones when ready."""
        self.start()
        with self._lock:
            self._engines.append((engine, engine_lock))
            with engine_lock:
                for database in self.attached.values():
                    engine.attach(database)

    def status(self) -> dict[str, Any]:
        """What ``GET /v1/rules`` reports: attached databases and the background builds."""
        self.start()
        with self._lock:
            attached = [
                {"rules": str(db.key), "max_seeds": db.max_seeds, "path": str(db.path)}
                for db in self.attached.values()
            ]
            builds = [
                {
                    "rules": str(item.key),
                    "presets": item.presets,
                    "max_seeds": self.seeds,
                    "state": item.state,
                    "seconds": item.seconds,
                }
                for item in self.plan
            ]
        return {
            "setting": self.setting,
            "build_seeds": self.seeds if self.plan else 0,
            "attached": attached,
            "builds": builds,
        }

    def _enough(self, key: RuleKey) -> bool:
        database = self.attached.get(key)
        return database is not None and database.max_seeds >= self.seeds

    def _build_missing(self) -> None:
        folder = databases.build_dir(self.setting)
        for item in self.plan:
            if item.state != "queued":
                continue
            rules = PRESETS[item.presets[0]]
            path = egdb.default_path(rules, self.seeds, folder)
            item.state = "building"
            started = time.perf_counter()
            try:
                if not path.exists():
                    _build_once(folder, path, item.presets[0], self.seeds)
                database = EndgameDatabase.open(path, rules)
            except Exception:  # the service answers without it, only slower
                log.exception("endgame database %s not available", path)
                item.state = "failed"
                continue
            item.seconds = round(time.perf_counter() - started, 1)
            self._attach(database)
            item.state = "attached"

    def _attach(self, database: EndgameDatabase) -> None:
        with self._lock:
            self.attached[database.key] = database
            engines = list(self._engines)
        for engine, engine_lock in engines:
            with engine_lock:
                engine.attach(database)
        log.info("endgame database %s attached", database)


def _build_once(folder: Path, path: Path, preset: str, seeds: int) -> None:
    """Build ``path`` unless another process does: whoever holds the lock builds, in a child
    process at nice 10 that inherits the lock."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        if path.exists():  # built by whoever held the lock before
            return
        log.info("building the endgame database %s in the background", path)
        code = (
            "import os, sys; os.nice(10); from kalah_core.cli import main; "
            "sys.exit(main(sys.argv[1:]))"
        )
        command = [sys.executable, "-c", code, "egdb", "build", "--rules", preset]
        command += ["--seeds", str(seeds), "-o", str(path), "--quiet"]
        subprocess.run(
            command, check=True, pass_fds=(lock_file.fileno(),), stdout=subprocess.DEVNULL
        )


_SERVICES: dict[tuple[int, str, int], DatabaseService] = {}
_SERVICES_LOCK = threading.Lock()


def service(setting: str | None, seeds: int) -> DatabaseService:
    """This process's database service for these settings (a forked worker makes its own)."""
    key = (os.getpid(), databases.setting(setting), seeds)
    found = _SERVICES.get(key)
    if found is None:
        with _SERVICES_LOCK:
            found = _SERVICES.get(key)
            if found is None:
                found = _SERVICES[key] = DatabaseService(setting, seeds)
    return found
