"""Where the endgame databases live, found the same way by the server and every command.

One setting, ``KALAH_EGDB_PATH``:

- ``auto`` (the default): the cache folder, ``$XDG_CACHE_HOME/kalah`` (``~/.cache/kalah``;
  platformdirs' user cache folder elsewhere). ``kalah egdb build`` writes there, the server
  builds there in the background, every command reads what is there;
- a folder of ``*.egdb`` files, or one file (several separated by ``:``);
- ``off``: no database.

For each rule key (houses, capture, end, remaining) the largest database found is used; a
file that cannot be read is skipped with a warning (answers stay the same, only slower).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .egdb import EndgameDatabase, EndgameDatabaseError, Header, RuleKey, read_header

ENV = "KALAH_EGDB_PATH"
log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """The cache folder of ``auto``: databases, and the server's embedded answer store."""
    from platformdirs import user_cache_path  # 14 ms of every start-up, for one path

    return user_cache_path("kalah", appauthor=False)


def setting(value: str | None = None) -> str:
    """``value``, else ``KALAH_EGDB_PATH``, else ``auto``."""
    return value or os.environ.get(ENV) or "auto"


def build_dir(value: str | None = None) -> Path:
    """Where new databases go: the setting's folder (the cache folder unless one is named)."""
    value = setting(value)
    first = Path(value.split(os.pathsep)[0])
    if value in ("auto", "off"):
        return cache_dir()
    return first if first.is_dir() or not first.suffix else first.parent


def files(value: str | None = None) -> list[Path]:
    """Every database file the setting names (existing ones only)."""
    value = setting(value)
    if value == "off":
        return []
    places = [cache_dir()] if value == "auto" else [Path(p) for p in value.split(os.pathsep)]
    found: list[Path] = []
    for place in places:
        if place.is_dir():
            found.extend(sorted(place.glob("*.egdb")))
        elif place.is_file():
            found.append(place)
    return found


def headers(value: str | None = None) -> dict[RuleKey, tuple[Path, Header]]:
    """The largest readable database of each rule key, without mapping any."""
    best: dict[RuleKey, tuple[Path, Header]] = {}
    for path in files(value):
        try:
            header = read_header(path)
        except EndgameDatabaseError as error:
            log.warning("skipping %s", error)
            continue
        old = best.get(header.key)
        if old is None or header.max_seeds > old[1].max_seeds:
            best[header.key] = (path, header)
    return best


def open_best(value: str | None = None, key: RuleKey | None = None) -> list[EndgameDatabase]:
    """The largest database of each rule key (of ``key`` only, if given), mapped."""
    opened = []
    for found, (path, _) in headers(value).items():
        if key is not None and found != key:
            continue
        try:
            opened.append(EndgameDatabase.open_any(path))
        except EndgameDatabaseError as error:
            log.warning("skipping %s", error)
    return opened
