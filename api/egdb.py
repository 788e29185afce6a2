"""Endgame databases for the service's engines: the configured files, or a small default.

``KALAH_EGDB_PATH`` is a database file, a folder of ``*.egdb`` files, ``off``, or unset
(``auto``): then a 16-seed database for the ``kalah`` rules (30 MB, a few seconds on two
cores) is built once per machine into ``$XDG_CACHE_HOME/kalah`` (``~/.cache/kalah``) in a
background thread and attached when ready; until then searches run without it (same answers,
slower). Databases are memory-mapped read-only, so every worker shares one copy.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path

from kalah_core import egdb
from kalah_core.egdb import EndgameDatabase
from kalah_core.rules import Rules
from kalah_core.solver import Engine

DEFAULT_SEEDS = 16
log = logging.getLogger(__name__)


def default_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kalah"


def attach_databases(engine: Engine, lock: threading.Lock, setting: str | None) -> None:
    """Attach the databases ``setting`` names to ``engine`` (under ``lock``, which guards its
    searches); ``auto`` returns at once and attaches the default from a background thread."""
    if setting == "off":
        return
    if setting in (None, "", "auto"):
        threading.Thread(
            target=_attach_default, args=(engine, lock), name="egdb-default", daemon=True
        ).start()
        return
    path = Path(setting)
    files = sorted(path.glob("*.egdb")) if path.is_dir() else [path]
    for file in files:
        database = EndgameDatabase.open_any(file)
        with lock:
            engine.attach(database)
        log.info("endgame database %s attached", database)


def _attach_default(engine: Engine, lock: threading.Lock) -> None:
    rules = Rules()
    folder = default_dir()
    path = egdb.default_path(rules, DEFAULT_SEEDS, folder)
    try:
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            # One builder per machine: the other workers wait for its file.
            with open(folder / ".build.lock", "w") as lock_file:
                fcntl.flock(lock_file, fcntl.LOCK_EX)
                if not path.exists():
                    log.info("building the default endgame database %s", path)
                    egdb.build(path, rules, DEFAULT_SEEDS, progress=False)
        database = EndgameDatabase.open(path, rules)
        with lock:
            engine.attach(database)
        log.info("endgame database %s attached", database)
    except Exception:  # the service answers without it, only slower
        log.exception("the default endgame database is not available")
