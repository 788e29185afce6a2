"""Endgame database: the exact future of every board with few seeds left in houses.

For a number of houses h and a bound N, the database holds, for every board with at most N
seeds in its 2h houses and for the player to move, the *future gain*
g = (final store difference for the mover) - (store difference now), exactly, in 3.8-3.9 bits
a board (format version 4, radix), about 4.15 bits (version 3, packed) or one signed byte
(version 2). Outside the ``majority``
option the future does not depend on the stores, so one entry serves every store pair: the
value of a position is ``g + my_store - opp_store``.

Which rules share a database: those with the same ``houses``, ``capture``, ``end`` and
``remaining`` (and N: a database for N also answers every board with fewer seeds).

- ``seeds`` does not matter: it only sets the start, and a database covers every board.
- ``pie`` does not matter: the swap is only pending at North's first turn, never in an
  endgame; a position with the swap pending is refused by :meth:`EndgameDatabase.lookup`.
- under ``majority`` a store holding more than half of all seeds ends the game, so g depends
  on the stores too, and a database serves one game's total of seeds (2 x houses x seeds):
  version 5 holds, for each board, one byte for each store the mover may have while neither
  store holds more than half (about N + 1 entries a board; see ``_egdb.pxd``).

:func:`rule_key` spells the shared key (e.g. ``h6-nonempty-either-owner``) and
:func:`default_path` a file name with it (``kalah-egdb-h6-nonempty-either-owner-n24.egdb``).

File format (little-endian), a 64-byte header and then the entries::

    offset  size  field
         0     8  magic b"KALAHEGD"
         8     4  format version: 2 (one byte a board), 3 (packed, 4 bits a board) or 4
                  (radix, 17 boards a 64-bit word)
        12     4  header size (64)
        16     1  houses
        17     1  capture: 1 = always, 0 = nonempty
        18     1  end: 1 = mover-empty, 0 = either-side-empty
        19     1  remaining: 1 = empty-side, 0 = owner
        20     4  N, the most seeds in houses
        24     8  number of entries, C(N + 2h, 2h) (version 5: ``entry_count``)
        32     8  checksum of the entries (see ``checksum_of``/``packed_checksum``, _egdb.pyx)
        40     8  version 3: the number of escape bytes; version 4: of escape codes (0 in 2)
        48     1  version 3: bits a board, 4; version 4: 3, the radix format (0 in 2, 5)
        49     2  version 5: the game's seeds (majority rules; 0 in the others)
        51     5  zero
        56     8  version 4: the number of far escape bytes (0 in 2, 3 and 5)
        64        version 2: the entries, int8 g, level n = 0..N, each level in rank order;
                  version 3: the sections of ``_egdb.packed_layout``: the window table
                  ((N + 1) x 128 int8), the nibbles (4 bits a board, in the same order),
                  the escapes before each block of 512 boards (uint64) and the escape
                  bytes (int8 g), see ``_egdb.pxd``;
                  version 4: the sections of ``_egdb.radix_layout``: the window tables
                  ((N + 1) x 2 x 5184 int8), the words (17 boards each), the escapes before
                  each block (uint16) and superblock (uint64), the escape codes (a nibble
                  each), the far escapes before each 512 codes (uint64), the far bytes (int8 g);
                  version 5: as version 2, with a row of int8 g for each board: one for each
                  store the mover may hold, the lowest first (``_egdb.pxd``)

Version 3 is exact for every board, like version 2: with k = (g + n) / 2 (0..n, the seeds
still in houses that end in the mover's store) a nibble holds k less the first value of a
window of 15 chosen per level n and seeds s on the mover's side, or 15 for a board outside it,
whose g is then an escape byte. Version 4 codes each board as a digit of radix 14 or 13 (a
window of 13 or 12 values of k, or an escape) in words of 17 boards, an escape as a nibble
beyond the window, and the rare board beyond that as a byte (see ``_egdb.pxd``): under half
the bytes of version 2. ``kalah egdb build`` writes version 4 (``--format packed``: version 3,
``--format byte``: version 2); all three are read.

The rank of a board within its level is the combinatorial-number-system (colex, stars and
bars) rank of its 2h house counts with the two sides interleaved: the mover's house 1, the
opponent's house 1, the mover's house 2, ... (see ``_egdb.pxd``; the order keeps a board's
children close together, which halves the build time of the large levels).
Files are written to a temporary name in the same directory and renamed into place, and opened
memory-mapped read-only (so every process on a machine shares one copy in the page cache);
the header is checked against the rules, and the file size against the header.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import _board, _egdb
from .errors import InvalidPositionError, InvalidRulesError, KalahError
from .files import write_atomic
from .position import Position
from .rules import Rules

MAGIC = b"KALAHEGD"
BYTE_VERSION = 2  # one byte a board, interleaved cell order (83b9e76); files of 1 are refused
PACKED_VERSION = 3  # 4 bits a board (window and escapes)
RADIX_VERSION = 4  # 17 boards a 64-bit word (3.77 bits), escape codes, far bytes
MAJORITY_VERSION = 5  # under `majority`: one byte an entry, a row of entries a board
FORMAT_VERSION = RADIX_VERSION
"""The version ``build`` writes by default (``majority`` rules: MAJORITY_VERSION)."""
VERSIONS = {BYTE_VERSION: 8, PACKED_VERSION: 4, RADIX_VERSION: 3, MAJORITY_VERSION: 8}
"""The versions this engine reads, with the bits-a-board byte of their header (the radix
format's 3 names the format: it takes 3.77 bits a board and its escapes)."""
FORMATS = {"radix": RADIX_VERSION, "packed": PACKED_VERSION, "byte": BYTE_VERSION}
"""``kalah egdb build --format``."""
_CODES = {BYTE_VERSION: 0, PACKED_VERSION: 1, RADIX_VERSION: 2, MAJORITY_VERSION: 0}
"""The builder's ``packed`` argument of each version."""
HEADER_SIZE = 64
MAX_SEEDS = _egdb.MAX_SEEDS
MAX_HOUSES = _board.BOARD_MAX_HOUSES
"""Databases cover boards of at most this many houses (the one-word board's); bigger boards are
searched without one."""
_HEADER = struct.Struct("<8sII4BIQQQBH5xQ")
assert HEADER_SIZE == _egdb.HEADER_SIZE and _HEADER.size <= HEADER_SIZE


class EndgameDatabaseError(KalahError):
    """A database file is missing, damaged, or was built for other rules."""

    def __init__(self, message: str) -> None:
        self.field = "egdb"
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class RuleKey:
    """The rule options a database depends on."""

    houses: int
    capture: str
    end: str
    remaining: str
    total: int = 0
    """Under ``majority`` the game's seeds (the stores decide when it ends); else 0."""

    def __str__(self) -> str:
        end = "either" if self.end == "either-side-empty" else "mover"
        majority = f"-majority{self.total}" if self.total else ""
        return f"h{self.houses}-{self.capture}-{end}-{self.remaining}{majority}"


@dataclass(frozen=True, slots=True)
class Header:
    """The header of a database file."""

    key: RuleKey
    max_seeds: int
    entries: int
    checksum: int
    version: int = FORMAT_VERSION
    escapes: int = 0
    far: int = 0

    @property
    def bits(self) -> int:
        """The header's bits a board: 8 (version 2), 4 (version 3) or 3 (version 4, the radix
        format; ``bits_per_board`` is what it takes)."""
        return VERSIONS[self.version]

    @property
    def bits_per_board(self) -> float:
        """Bits of the file after the header per board."""
        return 8 * self.body_bytes() / self.entries if self.entries else 0.0

    def body_bytes(self) -> int:
        """Bytes of the file after the header."""
        if self.version in (BYTE_VERSION, MAJORITY_VERSION):
            return self.entries
        if self.version == RADIX_VERSION:
            layout = _egdb.radix_layout(self.key.houses, self.max_seeds, self.escapes, self.far)
            return int(layout["total"])
        return int(_egdb.packed_layout(self.key.houses, self.max_seeds, self.escapes)["total"])

    def pack(self) -> bytes:
        data = _HEADER.pack(
            MAGIC,
            self.version,
            HEADER_SIZE,
            self.key.houses,
            int(self.key.capture == "always"),
            int(self.key.end == "mover-empty"),
            int(self.key.remaining == "empty-side"),
            self.max_seeds,
            self.entries,
            self.checksum,
            self.escapes,
            VERSIONS[self.version] if self.version in (PACKED_VERSION, RADIX_VERSION) else 0,
            self.key.total,
            self.far,
        )
        return data.ljust(HEADER_SIZE, b"\0")

    @classmethod
    def unpack(cls, data: bytes, path: str | os.PathLike[str]) -> Header:
        if len(data) < HEADER_SIZE or data[:8] != MAGIC:
            raise EndgameDatabaseError(f"{path}: not a Kalah endgame database")
        (_, version, size, houses, capture, end, remaining, max_seeds, entries, checksum) = (
            _HEADER.unpack_from(data)[:10]
        )
        escapes, bits, total, far = _HEADER.unpack_from(data)[10:]
        if version not in VERSIONS or size != HEADER_SIZE:
            raise EndgameDatabaseError(
                f"{path}: database format version {version} (header {size} bytes); "
                f"this engine reads versions {BYTE_VERSION} (one byte a board), "
                f"{PACKED_VERSION} (4 bits a board), {RADIX_VERSION} (radix) and "
                f"{MAJORITY_VERSION} (majority rules): rebuild it"
            )
        if (version == MAJORITY_VERSION) != (total > 0) or total > _egdb.MAX_SEEDS_IN_GAME:
            raise EndgameDatabaseError(
                f"{path}: damaged database header: version {version} for a game of {total} "
                f"seeds (version {MAJORITY_VERSION}, and only it, is for majority rules)"
            )
        if (
            (version in (BYTE_VERSION, MAJORITY_VERSION) and (bits or escapes or far))
            or (version in (PACKED_VERSION, RADIX_VERSION) and bits != VERSIONS[version])
            or (version == PACKED_VERSION and far)
        ):
            raise EndgameDatabaseError(
                f"{path}: damaged database header: version {version} with {bits} bits a "
                f"board, {escapes} escapes and {far} far escapes (version {BYTE_VERSION} has "
                f"0, 0 and 0, version {PACKED_VERSION} has {VERSIONS[PACKED_VERSION]} bits "
                f"and no far escapes, version {RADIX_VERSION} has {VERSIONS[RADIX_VERSION]} "
                "bits)"
            )
        if not 1 <= houses <= 8 or capture > 1 or end > 1 or remaining > 1:
            raise EndgameDatabaseError(f"{path}: damaged database header")
        if max_seeds > MAX_SEEDS or entries != _egdb.entry_count(houses, max_seeds, total):
            raise EndgameDatabaseError(f"{path}: damaged database header (sizes)")
        key = RuleKey(
            houses,
            "always" if capture else "nonempty",
            "mover-empty" if end else "either-side-empty",
            "empty-side" if remaining else "owner",
            total,
        )
        if escapes > entries or far > escapes:
            raise EndgameDatabaseError(f"{path}: damaged database header (escapes)")
        if version == RADIX_VERSION and max_seeds > _egdb.RADIX_MAX_SEEDS:
            raise EndgameDatabaseError(f"{path}: damaged database header (radix sizes)")
        return cls(key, max_seeds, entries, checksum, version, escapes, far)


def rule_key(rules: Rules) -> RuleKey:
    """The options that decide which database ``rules`` use; under ``majority`` also the
    game's seeds (2 x houses x seeds), since the stores decide when the game ends."""
    total = 2 * rules.houses * rules.seeds if rules.majority else 0
    return RuleKey(rules.houses, rules.capture, rules.end, rules.remaining, total)


def default_path(rules: Rules, seeds: int, directory: str | os.PathLike[str] = ".") -> Path:
    """``directory/kalah-egdb-<rule key>-n<seeds>.egdb``: the file name encodes what rules
    share the database and its bound ``seeds`` (seeds in houses)."""
    return Path(directory) / f"kalah-egdb-{rule_key(rules)}-n{seeds}.egdb"


def entry_count(houses: int, seeds: int, total: int = 0) -> int:
    """Boards with at most ``seeds`` seeds in 2 x ``houses`` houses (bytes of the entries);
    under ``majority`` in a game of ``total`` seeds, a board's entry for each store the mover
    may hold while neither store holds more than half (about seeds + 1 a board)."""
    return _egdb.entry_count(houses, seeds, total)


PACKED_ESCAPE_SHARE = 0.03
"""The share of boards a packed database is planned with as escapes (one byte each), for sizes
known before the build: measured 0.001 % at 16 seeds and 1.3 % at 24 (HISTORY.md, 2026-11-29),
growing with the seeds; none can escape up to 14."""
RADIX_ESCAPE_SHARE = 0.10
"""The share of boards a radix-format database is planned with as escape codes (3 bits each):
measured 0.15 % at 16 seeds, 1.66 % at 20 and 5.84 % at 24 (empty capture; HISTORY.md,
2026-11-29), growing with the seeds. Far escapes (a byte each) are planned at 4 % of them
(3.6 % at 24)."""


def _format(packed: bool | str) -> str:
    if packed is True:
        return "radix"
    if packed is False:
        return "byte"
    if packed not in FORMATS:
        raise ValueError(f"format {packed!r}: one of {', '.join(FORMATS)}")
    return packed


def file_bytes(houses: int, seeds: int, packed: bool | str = True, total: int = 0) -> int:
    """The size of a database file in the format ``packed`` (a key of ``FORMATS``; True: the
    default, radix; False: byte): exact for one byte a board; for the dense formats with
    ``RADIX_ESCAPE_SHARE`` or ``PACKED_ESCAPE_SHARE`` of the boards escaped (the escapes are
    known after the build). Under ``majority`` (``total`` > 0) one byte an entry, exact."""
    fmt = "byte" if total else _format(packed)
    count = entry_count(houses, seeds, total)
    if fmt == "byte":
        return HEADER_SIZE + count
    if fmt == "radix":
        escapes = int(count * RADIX_ESCAPE_SHARE)
        layout = _egdb.radix_layout(houses, seeds, escapes, escapes // 25)
        return HEADER_SIZE + int(layout["total"])
    escapes = int(count * PACKED_ESCAPE_SHARE)
    return HEADER_SIZE + int(_egdb.packed_layout(houses, seeds, escapes)["total"])


def build_memory(houses: int, seeds: int, packed: bool | str = True, total: int = 0) -> int:
    """Bytes a build holds at its peak: every board's byte for one byte a board (every entry's
    under ``majority``, ``total`` > 0); in the dense formats, the levels below N packed and the
    bytes of level N (the largest level, the last), which give way to its words as they are
    packed."""
    fmt = "byte" if total else _format(packed)
    if fmt == "byte":
        return entry_count(houses, seeds, total)
    below = file_bytes(houses, seeds - 1, fmt) if seeds else HEADER_SIZE
    return below + _egdb.level_size(houses, seeds)


def read_header(path: str | os.PathLike[str]) -> Header:
    """The header of a database file (checked for format, not for rules)."""
    try:
        with open(path, "rb") as f:
            data = f.read(HEADER_SIZE)
    except OSError as error:
        raise EndgameDatabaseError(f"cannot read endgame database {path}: {error}") from None
    return Header.unpack(data, path)


# --------------------------------------------------------------------- building


@dataclass(frozen=True, slots=True)
class BuildStats:
    """What a build produced and how long it took."""

    path: Path
    key: RuleKey
    max_seeds: int
    entries: int
    file_bytes: int
    threads: int
    solve_seconds: float
    write_seconds: float
    level_seconds: list[float] = field(default_factory=list)
    bits: int = 8
    escapes: int = 0
    pack_seconds: float = 0.0
    far: int = 0

    @property
    def bits_per_board(self) -> float:
        """Bits of the file after the header per board."""
        return 8 * (self.file_bytes - HEADER_SIZE) / self.entries if self.entries else 0.0

    @property
    def seconds(self) -> float:
        return self.solve_seconds + self.write_seconds


class _Progress:
    """A one-line progress bar with ETA on a text stream (updated at most 5 times a second)."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.enabled = enabled
        self.started = time.perf_counter()
        self.shown = 0.0

    def update(self, done: int, label: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.shown < 0.2:
            return
        self.shown = now
        elapsed = now - self.started
        frac = min(done / self.total, 1.0)
        eta = elapsed * (1 - frac) / frac if frac > 0 else 0.0
        bar = "#" * int(30 * frac) + "." * (30 - int(30 * frac))
        self.stream.write(
            f"\r[{bar}] {100 * frac:5.1f}% {_count(done)}/{_count(self.total)} "
            f"{label}  {_clock(elapsed)} elapsed, ETA {_clock(eta)} "
        )
        self.stream.flush()

    def close(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r{text}".ljust(100) + "\n")
            self.stream.flush()


def _count(n: int) -> str:
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 60}:{s % 60:02d}"


PROGRESS_SUFFIX = ".progress"
"""A build with ``progress_file`` writes its progress to ``<database path>.progress`` by
default (see :func:`progress_path`): JSON, rewritten at most once a second, removed at the
end; the server reports it in ``GET /v1/rules``."""


BUILD_SUFFIX = ".build.json"
"""Every build records how long it took beside its file, in ``<database path>.build.json``
(see :func:`read_build_seconds`): each process that attaches the file reads the same
duration, whichever of them ran or waited for the build."""


def build_record_path(path: str | os.PathLike[str]) -> Path:
    """Where the build of ``path`` records its duration (see BUILD_SUFFIX)."""
    path = Path(path)
    return path.with_name(path.name + BUILD_SUFFIX)


def read_build_seconds(path: str | os.PathLike[str]) -> float | None:
    """The seconds the build of the database ``path`` took (solving and writing), as that
    build recorded them; None without a record, or with one that is not this file's (another
    size: a file copied or rebuilt over it)."""
    try:
        record = json.loads(build_record_path(path).read_text(encoding="utf-8"))
        size = Path(path).stat().st_size
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("file_bytes") != size:
        return None
    seconds = record.get("seconds")
    return float(seconds) if isinstance(seconds, (int, float)) else None


def progress_path(path: str | os.PathLike[str]) -> Path:
    """Where the build of ``path`` writes its progress (see PROGRESS_SUFFIX)."""
    path = Path(path)
    return path.with_name(path.name + PROGRESS_SUFFIX)


@dataclass(slots=True)
class _Watch:
    """What a build reports besides its bar: a JSON progress file and a line per level."""

    path: Path
    total: int
    max_seeds: int
    progress_file: Path | None
    log: Callable[[str], None] | None
    ends: list[int]  # boards in levels 0..n, for each level n
    started: float = field(default_factory=time.perf_counter)
    written: float = 0.0
    level: int = 0

    def update(self, done: int, level: int) -> None:
        now = time.perf_counter()
        elapsed = now - self.started
        fraction = min(done / max(self.total, 1), 1.0)
        eta = _eta(elapsed, fraction)
        if self.log is not None and level > self.level:
            for finished in range(self.level, min(level, self.max_seeds + 1)):
                share = self.ends[finished] / max(self.total, 1)
                left = _eta(elapsed, share)
                self.log(
                    f"{self.path.name}: level {finished}/{self.max_seeds} done, "
                    f"{100 * share:.1f}% of {_count(self.total)} boards, "
                    f"{_clock(elapsed)} elapsed, ETA {'?' if left is None else _clock(left)}"
                )
        if self.progress_file is not None and (now - self.written >= 1.0 or level > self.level):
            self.written = now
            _write_json(
                self.progress_file,
                {
                    "path": str(self.path),
                    "max_seeds": self.max_seeds,
                    "level": min(level, self.max_seeds),
                    "done": done,
                    "total": self.total,
                    "progress": round(fraction, 4),
                    "elapsed_s": round(elapsed, 1),
                    "eta_s": None if eta is None else round(eta, 1),
                    "pid": os.getpid(),
                    "time": time.time(),
                },
            )
        self.level = max(self.level, level)


ETA_AFTER = 0.01
"""No time left is estimated before this share of the boards is done: the first levels take
next to nothing, and the time until then is mostly the start."""


def _eta(elapsed: float, fraction: float) -> float | None:
    return elapsed * (1 - fraction) / fraction if fraction >= ETA_AFTER else None


def _write_json(path: Path, data: dict[str, object]) -> None:
    write_atomic(path, json.dumps(data).encode())


def read_progress(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The progress a build of the database ``path`` last wrote, or None (no build running
    with a progress file, or one that stopped writing more than a minute ago)."""
    try:
        data = json.loads(progress_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or time.time() - float(data.get("time", 0)) > 60:
        return None
    return data


def build(
    path: str | os.PathLike[str],
    rules: Rules,
    seeds: int,
    *,
    progress: bool = True,
    threads: int | None = None,
    stream: TextIO | None = None,
    progress_file: bool = False,
    log: Callable[[str], None] | None = None,
    packed: bool = True,
    format: str | None = None,
) -> BuildStats:
    """Build the database of every board with at most ``seeds`` seeds in houses under
    ``rules`` (``seeds`` is the bound N, not the rules' start seeds) and write it to ``path``
    atomically. Uses ``threads`` threads (default: every core this process may run on) and
    shows a progress bar with ETA on ``stream`` (default stderr) when ``progress`` is on.
    With ``progress_file``, the progress is also written to :func:`progress_path` (for the
    server that started the build); ``log`` gets a line as each level is done.

    ``format`` (a key of ``FORMATS``) chooses the file format; without it ``packed`` (the
    default) writes format version 4, the radix format, under half the file and memory of
    version 2 (``packed=False``, one byte a board); ``format="packed"`` writes version 3, 4
    bits a board. Both dense formats hold only the level being solved in bytes while building
    (see ``build_memory``); a probe costs the same memory load."""
    key = rule_key(rules)
    if key.total > _egdb.MAX_SEEDS_IN_GAME:
        raise InvalidRulesError(
            "seeds",
            rules.seeds,
            f"at most {_egdb.MAX_SEEDS_IN_GAME} seeds in a game for a majority database",
        )
    if key.total and format not in (None, "byte"):
        raise InvalidRulesError("format", format, "byte: a majority database is one byte an entry")
    if format is None:
        format = "radix" if packed and not key.total else "byte"
    if format not in FORMATS:
        raise ValueError(f"format {format!r}: one of {', '.join(FORMATS)}")
    version = MAJORITY_VERSION if key.total else FORMATS[format]
    if not 0 <= seeds <= MAX_SEEDS:
        raise InvalidRulesError("seeds", seeds, f"a database bound 0..{MAX_SEEDS}")
    if key.houses > MAX_HOUSES:
        raise InvalidRulesError(
            "houses", key.houses, f"1..{MAX_HOUSES} for an endgame database (one byte a house)"
        )
    if version == RADIX_VERSION and seeds > _egdb.RADIX_MAX_SEEDS:
        raise InvalidRulesError(
            "seeds", seeds, f"a radix-format database bound 0..{_egdb.RADIX_MAX_SEEDS}"
        )
    if threads is None:
        threads = len(os.sched_getaffinity(0))
    path = Path(path)
    builder = _egdb.DatabaseBuilder(
        key.houses,
        key.capture == "always",
        key.end == "mover-empty",
        key.remaining == "empty-side",
        seeds,
        threads,
        _CODES[version],
        key.total,
    )
    total = builder.entries
    bar = _Progress(total, stream or sys.stderr, progress)
    ends = [sum(builder.level_range(n)) for n in range(seeds + 1)]
    if progress_file:
        path.parent.mkdir(parents=True, exist_ok=True)  # the progress file goes there first
    watch = _Watch(path, total, seeds, progress_path(path) if progress_file else None, log, ends)
    started = time.perf_counter()
    # The builder releases the GIL: it runs in a worker thread while this one draws the bar
    # (and turns Ctrl-C into a cancel between chunks).
    worker = threading.Thread(target=builder.run_all, name="egdb-build", daemon=True)
    worker.start()
    wait = 0.005  # short at first: small databases take milliseconds
    try:
        while worker.is_alive():
            worker.join(wait)
            wait = min(2 * wait, 0.2)
            bar.update(builder.done, f"level {builder.level}/{seeds}")
            watch.update(builder.done, builder.level)
    except BaseException:
        builder.cancel()
        worker.join()
        if watch.progress_file is not None:
            watch.progress_file.unlink(missing_ok=True)
        raise
    watch.update(builder.done, seeds + 1)  # the last level's line
    done = builder.done
    if done != total:  # pragma: no cover - only after a cancel
        raise RuntimeError(f"endgame database build stopped after {done} of {total} boards")
    level_seconds = builder.level_seconds()
    solve_seconds = time.perf_counter() - started
    bar.update(done, "writing", force=True)

    started = time.perf_counter()
    header = Header(key, seeds, total, builder.checksum(), version, builder.escapes, builder.far)
    file_bytes = HEADER_SIZE + builder.body_bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # builds only: not every process that maps a database

    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    record = build_record_path(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header.pack())
            builder.write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, 0o644)
        write_seconds = time.perf_counter() - started
        # The record first: whoever sees the file (it waited for it) finds its record there.
        _write_json(
            record,
            {
                "seconds": round(solve_seconds + write_seconds, 1),
                "solve_seconds": round(solve_seconds, 1),
                "write_seconds": round(write_seconds, 1),
                "threads": builder.threads,
                "max_seeds": seeds,
                "bits": header.bits,
                "bits_per_board": round(header.bits_per_board, 4),
                "file_bytes": file_bytes,
                "finished": time.time(),
            },
        )
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        record.unlink(missing_ok=True)
        raise
    finally:
        if watch.progress_file is not None:
            watch.progress_file.unlink(missing_ok=True)
    bar.close(
        f"{path}: {_count(total)} {'entries (boards x stores)' if key.total else 'boards'}, "
        f"{file_bytes:,} bytes ({header.bits_per_board:.2f} bits a board), "
        f"{solve_seconds:.1f} s on {builder.threads} thread(s) + {write_seconds:.1f} s writing"
    )
    return BuildStats(
        path,
        key,
        seeds,
        total,
        file_bytes,
        builder.threads,
        solve_seconds,
        write_seconds,
        level_seconds,
        header.bits,
        builder.escapes,
        builder.pack_seconds,
        builder.far,
    )


# --------------------------------------------------------------------- reading


class EndgameDatabase:
    """A database file mapped read-only. ``table`` is the compiled
    :class:`~kalah_core._egdb.EndgameTable` whose ``db`` struct the search probes; keep this
    object (or the table) alive while anything probes it."""

    def __init__(self, table: _egdb.EndgameTable, header: Header, path: Path) -> None:
        self.table = table
        self.header = header
        self.path = path

    @classmethod
    def open(cls, path: str | os.PathLike[str], rules: Rules) -> EndgameDatabase:
        """Map the database at ``path``, checking that it was built for ``rules``."""
        want = rule_key(rules)
        header = read_header(path)
        if header.key != want:
            raise EndgameDatabaseError(
                f"{path} was built for rules {header.key} "
                f"(houses, capture, end, remaining), not {want}"
            )
        return cls._map(path, header)

    @classmethod
    def open_any(cls, path: str | os.PathLike[str]) -> EndgameDatabase:
        """Map the database at ``path`` for whatever rules it was built for."""
        return cls._map(path, read_header(path))

    @classmethod
    def _map(cls, path: str | os.PathLike[str], header: Header) -> EndgameDatabase:
        key = header.key
        try:
            table = _egdb.EndgameTable(
                os.fspath(path),
                key.houses,
                header.max_seeds,
                HEADER_SIZE,
                key.capture == "always",
                key.end == "mover-empty",
                key.remaining == "empty-side",
                header.checksum,
                header.bits,
                header.escapes,
                header.far,
                key.total,
            )
        except (OSError, ValueError) as error:
            raise EndgameDatabaseError(f"cannot map endgame database {path}: {error}") from None
        return cls(table, header, Path(path))

    @property
    def houses(self) -> int:
        return self.header.key.houses

    @property
    def max_seeds(self) -> int:
        return self.header.max_seeds

    @property
    def key(self) -> RuleKey:
        return self.header.key

    @property
    def entries(self) -> int:
        return self.header.entries

    @property
    def file_bytes(self) -> int:
        """The size of the file (what the page cache holds of it when read through)."""
        return HEADER_SIZE + self.header.body_bytes()

    def covers(self, position: Position) -> bool:
        """Whether ``position`` can be looked up (houses, seeds in houses, no pending swap;
        under ``majority`` the game's total, and no store holding more than half of it)."""
        n = sum(position.south) + sum(position.north)
        if position.houses != self.houses or position.swap_available or n > self.max_seeds:
            return False
        total = self.key.total
        return not total or (position.total_seeds == total and 2 * max(position.stores) <= total)

    def gain(self, position: Position) -> int:
        """g: the final store difference still to come for the player to move."""
        if position.houses != self.houses:
            raise InvalidPositionError(
                f"the database has {self.houses} houses a side, the position {position.houses}"
            )
        if position.swap_available:
            raise InvalidPositionError("the endgame database has no positions with a swap pending")
        n = sum(position.south) + sum(position.north)
        if n > self.max_seeds:
            raise InvalidPositionError(
                f"{n} seeds in houses; the database holds at most {self.max_seeds}"
            )
        mover = position.to_move
        if not self.key.total:
            return self.table.g(position.side(mover), position.side(mover.other))
        if position.total_seeds != self.key.total:
            raise InvalidPositionError(
                f"{position.total_seeds} seeds in the game; the database (majority rules) "
                f"is for games of {self.key.total}"
            )
        try:
            return self.table.g(
                position.side(mover), position.side(mover.other), position.store(mover)
            )
        except ValueError as error:  # a store holds more than half: the game is over
            raise InvalidPositionError(str(error)) from None

    def lookup(self, position: Position) -> int:
        """The exact value of ``position`` (final store difference for the player to move)."""
        g = self.gain(position)
        me = position.to_move
        return g + position.store(me) - position.store(me.other)

    def preload(self) -> None:
        """Ask the kernel to read the whole file into the page cache now, in the background
        (``madvise(MADV_WILLNEED)``), so that the first probes do not wait on the disk."""
        self.table.preload()

    def verify(self) -> bool:
        """Whether the entries match the header's checksum (reads the whole file)."""
        return bool(self.table.compute_checksum() == self.header.checksum)

    def __repr__(self) -> str:
        return f"EndgameDatabase({str(self.path)!r}, {self.key}, max_seeds={self.max_seeds})"
