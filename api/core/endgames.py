"""Endgame databases for the service's engines, found by :mod:`kalah_core.databases`.

Each process attaches, at its engine's creation, the largest database of each rule key that
``KALAH_EGDB_PATH`` finds. In ``auto`` mode (the default) the service also builds, in the
background and once per machine, the databases of every preset's rule key that can have one
and is still missing, most used first (``kalah``/``kalah-pie``, ``kalaha``, ``piet-hein``;
and ``kalah-ru``'s under ``majority``, for its total of seeds: ``MAJORITY_SEEDS``), and
attaches each as it is ready. Answers are the same without them, only slower; readiness does
not wait.

Sizes (``KALAH_EGDB_SEEDS``): a number builds every key at that size (0: build none);
``auto`` (the default, :func:`choose_sizes`) gives the most used key, ``kalah``'s, the largest
of ``SIZES`` the machine affords (28 seeds: 2.9 GB of disk and of page cache in the radix
format, planned with 10 % of the boards escaped, and 3.7 GB of memory while it builds) and the
others 26 seeds (1.4 GB each).

Once per machine: a build holds an exclusive ``flock`` on ``<cache>/egdb-build.lock``; every
other process waits for it, then finds the file. The build runs in a child process at nice 10
(searches keep the CPU) that inherits the lock, so a recycled worker does not free it early.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kalah_core import databases, egdb
from kalah_core.egdb import EndgameDatabase, EndgameDatabaseError, RuleKey
from kalah_core.rules import PRESETS, Rules
from kalah_core.solver import Engine

log = logging.getLogger(__name__)
LOCK_NAME = "egdb-build.lock"
LOCK_POLL_S = 1.0
RESCAN_S = 10.0
"""How often each process looks in the databases' folder for a database that appeared (or
grew) since, e.g. one built by ``kalah egdb build`` or copied there, and attaches it."""
SERVER_PID_ENV = "KALAH_SERVER_PID"
"""The server's process (gunicorn's master, set by ``kalah_service.ops.gunicorn_conf``); a
background build stops when it ends. Unset: the process that starts the build."""


@dataclass(slots=True)
class Planned:
    """One database the background build provides."""

    key: RuleKey
    presets: list[str]
    seeds: int = 0
    state: str = "queued"  # queued, building, attached, failed


SIZES = (28, 26, 24, 22, 20, 16)
"""Sizes ``auto`` tries for the most used key, largest first. 30 seeds (11 GB of disk, and of
memory while it builds) is left out: its build takes longer than ``BUILD_TARGET_S`` on two cores."""
BUILD_CPU_S_PER_GBOARD = 70.0
"""CPU-seconds a build takes per 10^9 boards on an idle machine (measured on a 28-seed build:
HISTORY.md)."""
BUILD_TARGET_S = 300.0
"""``auto`` gives the most used key the largest size whose build takes at most this long on
the machine's idle cores, as ``BUILD_CPU_S_PER_GBOARD`` predicts it (28 seeds on 2 cores, 26
on 1)."""
OTHERS = 26
"""Size of every other key in ``auto`` (at most the first's): 26 seeds radix (1.4 GB) is about
what 24 seeds took in one byte a board (1.25 GB)."""
MEMORY_SHARE = 0.5
"""A build holds its dense levels and its last level's bytes in memory
(:func:`kalah_core.egdb.build_memory`): at most this share of the physical memory."""
DISK_SHARE = 0.5
"""Every planned file together: at most this share of the free disk."""
MAJORITY_SEEDS = 16
"""The size of a ``majority`` preset's database (``kalah-ru``'s: 0.48 GB, a byte for each
store the mover may hold; seconds to build), and the most ``KALAH_EGDB_SEEDS`` gives one."""
MAJORITY_HOUSES = 6
"""``majority`` presets of more houses get none (``kgp``'s 8x8 board: 16 seeds would be
tens of GB)."""


def plan(seeds: int | None = None, folder: Path | None = None) -> list[Planned]:
    """Every preset's rule key that can have a database, in the order of PRESETS, each with
    its size: ``seeds``, or in ``auto`` (None) :func:`choose_sizes` for this machine; then
    the ``majority`` presets of at most ``MAJORITY_HOUSES`` houses (``kalah-ru``), at most
    ``MAJORITY_SEEDS`` seeds."""
    planned: dict[RuleKey, Planned] = {}
    majority: dict[RuleKey, Planned] = {}
    for name, rules in PRESETS.items():
        if rules.majority and rules.houses > MAJORITY_HOUSES:
            continue
        key = egdb.rule_key(rules)
        (majority if key.total else planned).setdefault(key, Planned(key, [])).presets.append(name)
    items = list(planned.values())
    for item in majority.values():
        item.seeds = min(MAJORITY_SEEDS if seeds is None else seeds, MAJORITY_SEEDS)
        memory = egdb.build_memory(item.key.houses, item.seeds, total=item.key.total)
        if memory > physical_memory() * MEMORY_SHARE:
            item.seeds = 0
    if seeds is None:
        sizes = choose_sizes(
            [item.key for item in items],
            physical_memory(),
            free_disk(folder or Path(".")),
            len(os.sched_getaffinity(0)),
        )
    else:
        sizes = [seeds] * len(items)
    for item, size in zip(items, sizes, strict=True):
        item.seeds = size
    return items + list(majority.values())


def choose_sizes(keys: list[RuleKey], memory: int, disk: int, cores: int) -> list[int]:
    """``auto``'s size of each key (most used first), for ``memory`` bytes of physical memory,
    ``disk`` bytes free and ``cores`` cores: the first key the largest of ``SIZES`` whose
    build fits in ``MEMORY_SHARE`` of the memory and takes at most ``BUILD_TARGET_S`` on the
    idle cores, with every file in ``DISK_SHARE`` of the disk; the others ``OTHERS`` seeds (or
    the first's size, if smaller); 0 (none) when not even the smallest fits. Sizes are the
    radix format's (format 4, under 4 bits a board, what the background builds write). A
    machine with 8 GB and 2 cores gets 28 seeds for kalah (3.7 GB while it builds; 26 in one
    byte a board) and 26 for kalaha and piet-hein: 5.7 GB of disk in all; with one core 26 for
    every key."""
    for first in SIZES:
        sizes = [first] + [min(OTHERS, first)] * (len(keys) - 1)
        pairs = list(zip(keys, sizes, strict=True))
        build = [egdb.build_memory(k.houses, s) for k, s in pairs]
        files = [egdb.file_bytes(k.houses, s) for k, s in pairs]
        seconds = egdb.entry_count(keys[0].houses, first) / 1e9 * BUILD_CPU_S_PER_GBOARD
        seconds /= max(cores, 1)
        if (
            max(build) <= memory * MEMORY_SHARE
            and sum(files) <= disk * DISK_SHARE
            and (seconds <= BUILD_TARGET_S or first == SIZES[-1])
        ):
            return sizes
    return [0] * len(keys)


def physical_memory() -> int:
    """Bytes of physical memory: not what is free now, so that every worker of a machine,
    whenever it starts (a build in progress holds gigabytes), plans the same sizes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def free_disk(folder: Path) -> int:
    """Free bytes on the file system of ``folder`` (or of its nearest existing parent)."""
    for place in (folder, *folder.parents):
        if place.exists():
            return shutil.disk_usage(place).free
    return 0  # pragma: no cover - "/" exists


class DatabaseService:
    """This process's databases and the engines that probe them (one per process)."""

    def __init__(self, setting: str | None, seeds: int | None) -> None:
        """``seeds``: the size of every background build (0: none), None: ``auto``."""
        self.setting = databases.setting(setting)
        self.attached: dict[RuleKey, EndgameDatabase] = {}
        self.plan: list[Planned] = []
        if self.setting == "auto" and seeds != 0:
            self.plan = [p for p in plan(seeds, databases.build_dir(self.setting)) if p.seeds]
        self._engines: list[tuple[Engine, threading.Lock]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = False
        self._refused: set[tuple[str, int, float]] = set()  # files that could not be opened
        self.generation = 0
        """Bumped whenever the attached databases change: what :meth:`max_seeds` said may be
        kept while it stays the same."""

    def start(self) -> None:
        """Open what is there; in ``auto`` start the background builds. Once per process."""
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            for database in databases.open_best(self.setting):
                self.attached[database.key] = database
                warm(database)
                log.info("endgame database %s found", database)
            for item in self.plan:
                if self._enough(item):
                    item.state = "attached"
            if any(i.state == "queued" for i in self.plan):
                self._thread = threading.Thread(
                    target=self._build_missing, name="egdb-build", daemon=True
                )
                self._thread.start()
            if self.setting != "off":
                threading.Thread(target=self._watch_folder, name="egdb-watch", daemon=True).start()
            self.generation += 1
            self._started = True

    def rescan(self) -> list[EndgameDatabase]:
        """Attach every database the setting finds that is larger than the one attached for
        its rules (or the first for them); returns those attached. A file that cannot be
        opened (one still being copied) is tried again once its size or time changes."""
        attached = []
        for key, (path, header) in databases.headers(self.setting).items():
            with self._lock:
                current = self.attached.get(key)
            if current is not None and current.max_seeds >= header.max_seeds:
                continue
            try:
                stat = path.stat()
            except OSError:
                continue
            stamp = (str(path), stat.st_size, stat.st_mtime)
            if stamp in self._refused:
                continue
            try:
                database = EndgameDatabase.open_any(path)
            except EndgameDatabaseError as error:
                self._refused.add(stamp)
                log.warning("endgame database not attached (yet): %s", error)
                continue
            self._attach(database)
            attached.append(database)
        with self._lock:
            for item in self.plan:
                if item.state == "queued" and self._enough(item):
                    item.state = "attached"
        return attached

    def _watch_folder(self) -> None:
        while True:
            time.sleep(RESCAN_S)
            try:
                self.rescan()
            except Exception:  # pragma: no cover - keep watching
                log.exception("looking for new endgame databases")

    def attach_to(self, engine: Engine, engine_lock: threading.Lock) -> None:
        """Attach every database there is to ``engine``, and the built ones when ready."""
        self.start()
        with self._lock:
            self._engines.append((engine, engine_lock))
            with engine_lock:
                for database in self.attached.values():
                    engine.attach(database)

    def max_seeds(self, rules: Rules) -> int:
        """Seeds in houses covered by the database attached for ``rules`` (-1: none; under
        ``majority``, the one for games of 2 x houses x seeds)."""
        self.start()
        with self._lock:
            database = self.attached.get(egdb.rule_key(rules))
        return -1 if database is None else database.max_seeds

    def status(self) -> dict[str, object]:
        """What ``GET /v1/rules`` reports: attached databases and the background builds."""
        self.start()
        with self._lock:
            attached = [
                # the file's name only: where the server keeps its files is its own business
                {"rules": str(db.key), "max_seeds": db.max_seeds, "path": db.path.name}
                for db in self.attached.values()
            ]
            builds = [
                {
                    "rules": str(item.key),
                    "presets": item.presets,
                    "max_seeds": item.seeds,
                    "state": item.state,
                    "seconds": self._seconds(item),
                    **self._progress(item),
                }
                for item in self.plan
            ]
        return {
            "setting": self.setting if self.setting in ("auto", "off") else "paths",
            "build_seeds": max((item.seeds for item in self.plan), default=0),
            "attached": attached,
            "builds": builds,
        }

    def _seconds(self, item: Planned) -> float | None:
        """How long the attached database's build took, as the build recorded it beside the
        file: the same in every process, whichever built it, waited for it or found it
        (each timing its own part gave 1,121.6, 632.6 or null for one 1,605 s build)."""
        database = self.attached.get(item.key) if item.state == "attached" else None
        return None if database is None else egdb.read_build_seconds(database.path)

    def _progress(self, item: Planned) -> dict[str, float | None]:
        """``progress`` (0..1) and ``eta_s`` of a planned database: what its build (in
        whichever process of the machine runs it) last wrote to its progress file."""
        if item.state == "attached":
            return {"progress": 1.0, "eta_s": 0.0}
        if item.state == "failed":
            return {"progress": 0.0, "eta_s": None}
        rules = PRESETS[item.presets[0]]
        path = egdb.default_path(rules, item.seeds, databases.build_dir(self.setting))
        found = egdb.read_progress(path)
        if found is None:
            if item.state == "building" and path.exists():  # built, being attached
                return {"progress": 1.0, "eta_s": 0.0}
            return {"progress": 0.0, "eta_s": None}
        eta = found.get("eta_s")
        return {
            "progress": float(found.get("progress", 0.0)),
            "eta_s": None if eta is None else float(eta),
        }

    def _enough(self, item: Planned) -> bool:
        database = self.attached.get(item.key)
        return database is not None and database.max_seeds >= item.seeds

    def _build_missing(self) -> None:
        folder = databases.build_dir(self.setting)
        for item in self.plan:
            if item.state != "queued":
                continue
            if self._enough(item):  # found in the folder meanwhile (rescan)
                item.state = "attached"
                continue
            rules = PRESETS[item.presets[0]]
            path = egdb.default_path(rules, item.seeds, folder)
            item.state = "building"
            try:
                if not path.exists():
                    _build_once(folder, path, item.presets[0], item.seeds)
                database = EndgameDatabase.open(path, rules)
            except Exception:  # the service answers without it, only slower
                log.exception("endgame database %s not available", path)
                item.state = "failed"
                continue
            if not self._enough(item):  # (a rescan may have attached it first)
                self._attach(database)
            item.state = "attached"

    def _attach(self, database: EndgameDatabase) -> None:
        warm(database)
        with self._lock:
            self.attached[database.key] = database
            self.generation += 1
            # Under the same lock, so that status() never shows a database attached while its
            # build still says building (the folder's watcher may attach a fresh build first).
            for item in self.plan:
                if item.state in ("queued", "building") and self._enough(item):
                    item.state = "attached"
            engines = list(self._engines)
        for engine, engine_lock in engines:
            with engine_lock:
                engine.attach(database)
        log.info("endgame database %s attached", database)


def warm(database: EndgameDatabase) -> None:
    """Have the kernel read ``database`` into the page cache in the background when it fits
    in ``MEMORY_SHARE`` of the memory: a probe of a cold page waits on the disk, so a fresh
    server's first answers would prove less within their budget."""
    if database.file_bytes <= physical_memory() * MEMORY_SHARE:
        database.preload()


def _build_once(folder: Path, path: Path, preset: str, seeds: int) -> None:
    """Build ``path`` unless another process does: whoever holds the lock builds, in a child
    process at nice 10 that inherits the lock."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a") as lock_file:
        # Wait for the lock, but stop waiting once the file is there: the holder may have
        # gone on to the next database (a fresh 2-worker server: 373 s instead of 176 s).
        while True:
            if path.exists():  # built by whoever held the lock before
                return
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(LOCK_POLL_S)
        if path.exists():
            return
        log.info("building the endgame database %s in the background", path)
        code = (
            "import os, sys; os.nice(10); from kalah_core.cli import main; "
            "sys.exit(main(sys.argv[1:]))"
        )
        command = [sys.executable, "-c", code, "egdb", "build", "--rules", preset]
        command += ["--seeds", str(seeds), "-o", str(path), "--quiet", "--log"]
        command += ["--progress-file", "--server-pid", str(server_pid())]
        # Its log (a line per level) goes to the server's stderr.
        subprocess.run(
            command, check=True, pass_fds=(lock_file.fileno(),), stdout=subprocess.DEVNULL
        )


def server_pid() -> int:
    """The server process a background build stops with (see SERVER_PID_ENV)."""
    try:
        return int(os.environ.get(SERVER_PID_ENV) or os.getpid())
    except ValueError:
        return os.getpid()


_SERVICES: dict[tuple[int, str, int | None], DatabaseService] = {}
_SERVICES_LOCK = threading.Lock()


def service(setting: str | None, seeds: int | None) -> DatabaseService:
    """This process's database service for these settings (a forked worker makes its own)."""
    key = (os.getpid(), databases.setting(setting), seeds)
    found = _SERVICES.get(key)
    if found is None:
        with _SERVICES_LOCK:
            found = _SERVICES.get(key)
            if found is None:
                found = _SERVICES[key] = DatabaseService(setting, seeds)
    return found
