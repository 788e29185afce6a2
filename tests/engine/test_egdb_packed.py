"""The packed endgame database (format version 3, 4 bits a board) against the byte database
(version 2), the reference rules and the solver; its header checks; version 2 still opens."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kalah_core import Position, Rules, Side
from kalah_core import reference as ref
from kalah_core._egdb import packed_layout
from kalah_core.egdb import (
    BYTE_VERSION,
    HEADER_SIZE,
    PACKED_VERSION,
    EndgameDatabase,
    EndgameDatabaseError,
    build,
    build_memory,
    entry_count,
    file_bytes,
    read_header,
)
from kalah_core.solver import Engine

VARIANTS = [
    Rules(houses=1, capture=capture, end=end, remaining=remaining)
    for capture in ("nonempty", "always")
    for end in ("either-side-empty", "mover-empty")
    for remaining in ("owner", "empty-side")
]
VARIANT_IDS = [f"{r.capture}-{r.end}-{r.remaining}" for r in VARIANTS]

_built: dict[tuple[Path, Rules, int, bool], EndgameDatabase] = {}


@pytest.fixture(scope="module")
def db_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("egdb-packed")


def database(directory: Path, rules: Rules, seeds: int, packed: bool) -> EndgameDatabase:
    key = (directory, rules, seeds, packed)
    if key not in _built:
        name = f"{rules.houses}-{rules.capture}-{rules.end}-{rules.remaining}-{seeds}-{packed}"
        path = directory / f"{name}.egdb"
        build(path, rules, seeds, progress=False, threads=2, packed=packed)
        _built[key] = EndgameDatabase.open(path, rules)
    return _built[key]


def boards(houses: int, seeds: int) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    for cells in itertools.product(range(seeds + 1), repeat=2 * houses):
        if sum(cells) <= seeds:
            yield cells[:houses], cells[houses:]


# Sizes with boards outside their window (levels above 14 seeds): the escapes are read. Every
# rule variant on two houses, two on three and four (a second each).
CASES = [pytest.param(2, 30, v, id=f"2-30-{i}") for v, i in zip(VARIANTS, VARIANT_IDS, strict=True)]
CASES += [
    pytest.param(h, n, VARIANTS[k], id=f"{h}-{n}-{VARIANT_IDS[k]}")
    for h, n in [(3, 20), (4, 18)]
    for k in (0, 7)
]


@pytest.mark.parametrize(("houses", "seeds", "variant"), CASES)
def test_packed_equals_byte_on_every_board(
    db_dir: Path, houses: int, seeds: int, variant: Rules
) -> None:
    rules = variant.replace(houses=houses)
    packed = database(db_dir, rules, seeds, True)
    byte = database(db_dir, rules, seeds, False)
    assert (packed.header.version, byte.header.version) == (PACKED_VERSION, BYTE_VERSION)
    assert packed.header.escapes > 0
    raw = byte.path.read_bytes()[HEADER_SIZE:]
    start = 0
    for n in range(seeds + 1):
        values = packed.table.level_values(n)
        assert values == byte.table.level_values(n) == raw[start : start + len(values)], n
        start += len(values)
    assert start == entry_count(houses, seeds)


@pytest.mark.parametrize(
    "variant", [VARIANTS[0], VARIANTS[7]], ids=[VARIANT_IDS[0], VARIANT_IDS[7]]
)
def test_escaped_and_sampled_boards_equal_the_reference(db_dir: Path, variant: Rules) -> None:
    """Every escaped board of two houses and 20 seeds, and a sample of the others, against a
    brute force over the reference rules (stores and either side to move)."""
    rules = variant.replace(houses=2)
    db = database(db_dir, rules, 20, True)
    rng = random.Random(20)
    escaped = [b for b in boards(2, 20) if db.table.is_escape(*b)]
    assert len(escaped) == db.header.escapes > 0
    for south, north in escaped + rng.sample(list(boards(2, 20)), 100):
        stores = (rng.randint(0, 6), rng.randint(0, 6))
        side = rng.choice(list(Side))
        position = Position(south, north, stores, side)
        assert db.lookup(position) == ref.value(position, rules), position


def test_the_search_reads_both_formats_alike(db_dir: Path) -> None:
    """The same values and the same nodes whichever format the search probes."""
    rules = Rules(houses=4)
    engines = [Engine(tt_mb=8, databases=[database(db_dir, rules, 18, p)]) for p in (True, False)]
    rng = random.Random(4)
    for _ in range(6):
        cells = [0] * 8
        for _ in range(24):
            cells[rng.randrange(8)] += 1
        position = Position(tuple(cells[:4]), tuple(cells[4:]), (2, 1))
        packed, byte = (e.analyse(position, rules) for e in engines)
        for engine in engines:
            engine.clear()
        assert packed.exact and byte.exact
        assert (packed.value, packed.nodes) == (byte.value, byte.nodes), position


def test_sizes(db_dir: Path) -> None:
    rules = Rules(houses=4)
    packed = database(db_dir, rules, 18, True)
    byte = database(db_dir, rules, 18, False)
    assert byte.path.stat().st_size == HEADER_SIZE + entry_count(4, 18) == file_bytes(4, 18, False)
    size = packed.path.stat().st_size
    assert size == HEADER_SIZE + packed.header.body_bytes()
    window = packed_layout(4, 18)["nibbles"]  # the window table: 10 KB a level, whatever N
    assert 8 * (size - window) / packed.entries < 4.3  # 4 bits, block counts, a few escapes
    assert size <= file_bytes(4, 18, True)  # planned with 1 % escapes
    assert build_memory(6, 28, False) == entry_count(6, 28)
    assert build_memory(6, 28, True) < entry_count(6, 28) * 0.9


def test_byte_format_still_opens(tmp_path: Path) -> None:
    rules = Rules(houses=3)
    path = tmp_path / "old.egdb"
    stats = build(path, rules, 9, progress=False, packed=False)
    header = read_header(path)
    assert (header.version, header.bits, header.escapes, stats.bits) == (2, 8, 0, 8)
    assert path.stat().st_size == HEADER_SIZE + entry_count(3, 9)
    db = EndgameDatabase.open(path, rules)
    assert db.verify()
    position = Position((1, 0, 4), (2, 0, 2), (3, 1), Side.NORTH)
    assert db.lookup(position) == ref.value(position, rules)


def _patched(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def test_header_mismatches_are_refused(tmp_path: Path) -> None:
    rules = Rules(houses=2)
    packed, byte = tmp_path / "p.egdb", tmp_path / "b.egdb"

    def fresh() -> None:
        build(packed, rules, 24, progress=False)
        build(byte, rules, 24, progress=False, packed=False)

    fresh()
    assert read_header(packed).escapes > 0
    _patched(packed, 48, b"\x05")  # 5 bits a board: no such format
    with pytest.raises(EndgameDatabaseError, match="version 3 with 5 bits a board"):
        EndgameDatabase.open(packed, rules)
    _patched(byte, 48, b"\x04")  # a byte file that says 4 bits
    with pytest.raises(EndgameDatabaseError, match="version 2 with 4 bits a board"):
        EndgameDatabase.open(byte, rules)
    fresh()
    _patched(packed, 8, BYTE_VERSION.to_bytes(4, "little"))  # packed entries, a version-2 header
    with pytest.raises(EndgameDatabaseError, match="version 2 with 4 bits"):
        EndgameDatabase.open(packed, rules)
    fresh()
    _patched(byte, 8, PACKED_VERSION.to_bytes(4, "little"))  # byte entries, a version-3 header
    with pytest.raises(EndgameDatabaseError, match="version 3 with 0 bits"):
        EndgameDatabase.open(byte, rules)
    fresh()
    escapes = read_header(packed).escapes
    _patched(packed, 40, (escapes + 1).to_bytes(8, "little"))  # an escape count off by one
    with pytest.raises(EndgameDatabaseError, match=r"expected .* 4-bit database"):
        EndgameDatabase.open(packed, rules)
    fresh()
    _patched(packed, 40, (10**9).to_bytes(8, "little"))
    with pytest.raises(EndgameDatabaseError, match="damaged database header"):
        EndgameDatabase.open(packed, rules)
    fresh()
    packed.write_bytes(packed.read_bytes()[:-1])
    with pytest.raises(EndgameDatabaseError, match="truncated"):
        EndgameDatabase.open(packed, rules)
    fresh()
    _patched(packed, 8, (4).to_bytes(4, "little"))
    with pytest.raises(EndgameDatabaseError, match=r"reads versions 2 .* and 3"):
        EndgameDatabase.open(packed, rules)


def test_checksum_covers_nibbles_and_escapes(tmp_path: Path) -> None:
    rules = Rules(houses=2)
    path = tmp_path / "p.egdb"
    size = build(path, rules, 24, progress=False).file_bytes
    db = EndgameDatabase.open(path, rules)
    assert db.verify()
    nibbles = HEADER_SIZE + packed_layout(2, 24)["nibbles"]
    for offset in (nibbles + 5, size - 1):  # a nibble byte, the last escape
        raw = path.read_bytes()
        _patched(path, offset, bytes([raw[offset] ^ 0x11]))
        assert not EndgameDatabase.open(path, rules).verify()
        _patched(path, offset, raw[offset : offset + 1])
        assert EndgameDatabase.open(path, rules).verify()


def test_cli_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kalah_core.cli import main

    for fmt, version, bits in (("byte", 2, 8), ("packed", 3, 4)):
        path = tmp_path / f"{fmt}.egdb"
        args = ["egdb", "build", "--seeds", "16", "--houses", "2", "--format", fmt]
        assert main([*args, "-o", str(path), "--json", "--quiet"]) == 0
        built = json.loads(capsys.readouterr().out)
        assert (built["bits"], built["bytes"]) == (bits, path.stat().st_size)
        assert main(["egdb", "info", str(path), "--verify", "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert (info["format_version"], info["bits"], info["verified"]) == (version, bits, True)
        assert info["bytes"] == path.stat().st_size and info["escapes"] == built["escapes"]
