"""The dense endgame databases (format version 4, radix, and 3, 4 bits a board) against the
byte database (version 2), the reference rules and the solver; their header checks; version 2
still opens."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kalah_core import Position, Rules, Side
from kalah_core import reference as ref
from kalah_core._egdb import (
    packed_layout,
    radix_decode,
    radix_encode,
    radix_layout,
    radix_radices,
)
from kalah_core.egdb import (
    BYTE_VERSION,
    HEADER_SIZE,
    PACKED_VERSION,
    RADIX_VERSION,
    EndgameDatabase,
    EndgameDatabaseError,
    build,
    build_memory,
    entry_count,
    file_bytes,
    read_header,
)
from kalah_core.errors import InvalidRulesError
from kalah_core.solver import Engine

VARIANTS = [
    Rules(houses=1, capture=capture, end=end, remaining=remaining)
    for capture in ("nonempty", "always")
    for end in ("either-side-empty", "mover-empty")
    for remaining in ("owner", "empty-side")
]
VARIANT_IDS = [f"{r.capture}-{r.end}-{r.remaining}" for r in VARIANTS]

_built: dict[tuple[Path, Rules, int, str], EndgameDatabase] = {}
DENSE = ("radix", "packed")
VERSION_OF = {"radix": RADIX_VERSION, "packed": PACKED_VERSION}


@pytest.fixture(scope="module")
def db_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("egdb-packed")


def database(directory: Path, rules: Rules, seeds: int, fmt: str) -> EndgameDatabase:
    key = (directory, rules, seeds, fmt)
    if key not in _built:
        name = f"{rules.houses}-{rules.capture}-{rules.end}-{rules.remaining}-{seeds}-{fmt}"
        path = directory / f"{name}.egdb"
        build(path, rules, seeds, progress=False, threads=2, format=fmt)
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


@pytest.mark.parametrize("fmt", DENSE)
@pytest.mark.parametrize(("houses", "seeds", "variant"), CASES)
def test_packed_equals_byte_on_every_board(
    db_dir: Path, houses: int, seeds: int, variant: Rules, fmt: str
) -> None:
    rules = variant.replace(houses=houses)
    packed = database(db_dir, rules, seeds, fmt)
    byte = database(db_dir, rules, seeds, "byte")
    assert (packed.header.version, byte.header.version) == (VERSION_OF[fmt], BYTE_VERSION)
    assert packed.header.escapes > 0
    assert packed.verify()
    raw = byte.path.read_bytes()[HEADER_SIZE:]
    start = 0
    for n in range(seeds + 1):
        values = packed.table.level_values(n)
        assert values == byte.table.level_values(n) == raw[start : start + len(values)], n
        start += len(values)
    assert start == entry_count(houses, seeds)


@pytest.mark.parametrize("fmt", DENSE)
@pytest.mark.parametrize(
    "variant", [VARIANTS[0], VARIANTS[7]], ids=[VARIANT_IDS[0], VARIANT_IDS[7]]
)
def test_escaped_and_sampled_boards_equal_the_reference(
    db_dir: Path, variant: Rules, fmt: str
) -> None:
    """Every escaped board of two houses and 20 seeds, and a sample of the others, against a
    brute force over the reference rules (stores and either side to move)."""
    rules = variant.replace(houses=2)
    db = database(db_dir, rules, 20, fmt)
    rng = random.Random(20)
    escaped = [b for b in boards(2, 20) if db.table.is_escape(*b)]
    assert len(escaped) == db.header.escapes > 0
    for south, north in escaped + rng.sample(list(boards(2, 20)), 100):
        stores = (rng.randint(0, 6), rng.randint(0, 6))
        side = rng.choice(list(Side))
        position = Position(south, north, stores, side)
        assert db.lookup(position) == ref.value(position, rules), position


def test_the_search_reads_every_format_alike(db_dir: Path) -> None:
    """The same values and the same nodes whichever format the search probes."""
    rules = Rules(houses=4)
    engines = [
        Engine(tt_mb=8, databases=[database(db_dir, rules, 18, f)])
        for f in ("radix", "packed", "byte")
    ]
    rng = random.Random(4)
    for _ in range(6):
        cells = [0] * 8
        for _ in range(24):
            cells[rng.randrange(8)] += 1
        position = Position(tuple(cells[:4]), tuple(cells[4:]), (2, 1))
        radix, packed, byte = (e.analyse(position, rules) for e in engines)
        for engine in engines:
            engine.clear()
        assert radix.exact and packed.exact and byte.exact
        assert (radix.value, radix.nodes) == (byte.value, byte.nodes), position
        assert (packed.value, packed.nodes) == (byte.value, byte.nodes), position


def test_sizes(db_dir: Path) -> None:
    rules = Rules(houses=4)
    packed = database(db_dir, rules, 18, "packed")
    radix = database(db_dir, rules, 18, "radix")
    byte = database(db_dir, rules, 18, "byte")
    assert byte.path.stat().st_size == HEADER_SIZE + entry_count(4, 18) == file_bytes(4, 18, False)
    size = packed.path.stat().st_size
    assert size == HEADER_SIZE + packed.header.body_bytes()
    window = packed_layout(4, 18)["nibbles"]  # the window table: 10 KB a level, whatever N
    assert 8 * (size - window) / packed.entries < 4.3  # 4 bits, block counts, a few escapes
    assert size <= file_bytes(4, 18, "packed")  # planned with 3 % escapes
    size = radix.path.stat().st_size
    assert size == HEADER_SIZE + radix.header.body_bytes()
    window = radix_layout(4, 18)["words"]  # the window tables: 10 KB a level, whatever N
    assert 2 * (size - window) < byte.path.stat().st_size  # under half the bytes but those
    assert 8 * (size - window) / radix.entries < 3.95  # 3.77 bits, block counts, escapes
    assert size <= file_bytes(4, 18)  # the default format, planned with 5 % escapes
    assert build_memory(6, 28, False) == entry_count(6, 28)
    assert build_memory(6, 28, True) < entry_count(6, 28) * 0.9


def test_byte_format_still_opens(tmp_path: Path) -> None:
    rules = Rules(houses=3)
    path = tmp_path / "old.egdb"
    stats = build(path, rules, 9, progress=False, format="byte")
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
        build(packed, rules, 24, progress=False, format="packed")
        build(byte, rules, 24, progress=False, format="byte")

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
    _patched(packed, 8, (5).to_bytes(4, "little"))  # the majority format, with no game total
    with pytest.raises(EndgameDatabaseError, match="only it, is for majority rules"):
        EndgameDatabase.open(packed, rules)
    fresh()
    _patched(packed, 8, (6).to_bytes(4, "little"))
    with pytest.raises(EndgameDatabaseError, match=r"reads versions 2 .*, 3 .*, 4 .* and 5"):
        EndgameDatabase.open(packed, rules)
    fresh()
    _patched(packed, 8, RADIX_VERSION.to_bytes(4, "little"))  # 4-bit entries, a radix header
    with pytest.raises(EndgameDatabaseError, match="version 4 with 4 bits"):
        EndgameDatabase.open(packed, rules)


def test_radix_header_mismatches_are_refused(tmp_path: Path) -> None:
    rules = Rules(houses=2)
    path = tmp_path / "r.egdb"

    def fresh() -> None:
        build(path, rules, 30, progress=False)

    fresh()
    header = read_header(path)
    assert (header.version, header.bits) == (RADIX_VERSION, 3)
    assert header.escapes > header.far > 0
    _patched(path, 48, b"\x04")  # a radix file that says 4 bits
    with pytest.raises(EndgameDatabaseError, match="version 4 with 4 bits"):
        EndgameDatabase.open(path, rules)
    fresh()
    _patched(path, 8, PACKED_VERSION.to_bytes(4, "little"))  # radix entries, a version-3 header
    with pytest.raises(EndgameDatabaseError, match="version 3 with 3 bits"):
        EndgameDatabase.open(path, rules)
    fresh()
    _patched(path, 56, (header.far + 1).to_bytes(8, "little"))  # one far byte too many
    with pytest.raises(EndgameDatabaseError, match="truncated or not a 3-bit database"):
        EndgameDatabase.open(path, rules)
    fresh()
    _patched(path, 56, (header.escapes + 1).to_bytes(8, "little"))  # more far than escapes
    with pytest.raises(EndgameDatabaseError, match=r"damaged database header \(escapes\)"):
        EndgameDatabase.open(path, rules)
    fresh()
    total = radix_layout(2, 30, header.escapes, header.far)["total"]
    more = next(  # an escape count whose sections have the same sizes
        e
        for e in range(header.escapes + 1, header.escapes + 600)
        if radix_layout(2, 30, e, header.far)["total"] == total
    )
    _patched(path, 40, more.to_bytes(8, "little"))
    assert not EndgameDatabase.open(path, rules).verify()  # the checksum counts the escapes
    fresh()
    _patched(path, 40, (header.escapes + 2000).to_bytes(8, "little"))
    with pytest.raises(EndgameDatabaseError, match="truncated"):
        EndgameDatabase.open(path, rules)
    fresh()
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(EndgameDatabaseError, match="truncated"):
        EndgameDatabase.open(path, rules)
    with pytest.raises(InvalidRulesError, match=r"bound 0\.\.63"):
        build(tmp_path / "big.egdb", rules, 64, progress=False, format="radix")


def test_radix_far_escapes_equal_the_reference(db_dir: Path) -> None:
    """Two houses, 30 seeds: boards beyond the window and its 7 codes on either side (far
    bytes) exist, and read as the reference rules play them."""
    rules = Rules(houses=2, capture="always")
    db = database(db_dir, rules, 30, "radix")
    assert db.header.far > 0
    rng = random.Random(30)
    escaped = [b for b in boards(2, 30) if db.table.is_escape(*b)]
    assert len(escaped) == db.header.escapes
    for south, north in rng.sample(escaped, 60):
        position = Position(south, north, (0, 0), Side.SOUTH)
        assert db.lookup(position) == ref.value(position, rules), position


@given(st.lists(st.integers(0, 12), min_size=17, max_size=17), st.data())
def test_radix_words_round_trip(low: list[int], data: st.DataObject) -> None:
    """Any 17 digits (each below its radix) read back one by one as a probe reads them, and
    the escapes (digits equal to radix - 1) counted before each digit."""
    radices = radix_radices()
    assert len(radices) == 17 and radices.count(14) == 10 and radices.count(13) == 7
    digits = [
        data.draw(st.integers(0, r - 1)) if d == 12 else d
        for d, r in zip(low, radices, strict=True)
    ]
    word = radix_encode(digits)
    assert 0 <= word < 2**64
    read, before, total = radix_decode(word)
    assert read == digits
    escapes = [int(d == r - 1) for d, r in zip(digits, radices, strict=True)]
    assert before == [sum(escapes[:j]) for j in range(18)]
    assert total == sum(escapes)


def test_radix_extreme_words() -> None:
    radices = radix_radices()
    for digits in ([0] * 17, [r - 1 for r in radices], [r - 2 for r in radices]):
        assert radix_decode(radix_encode(digits))[0] == digits
    with pytest.raises(ValueError):
        radix_encode([13] * 17)  # 13 is past the radix of the last 7 digits


def test_checksum_covers_nibbles_and_escapes(tmp_path: Path) -> None:
    rules = Rules(houses=2)
    path = tmp_path / "p.egdb"
    size = build(path, rules, 24, progress=False, format="packed").file_bytes
    db = EndgameDatabase.open(path, rules)
    assert db.verify()
    nibbles = HEADER_SIZE + packed_layout(2, 24)["nibbles"]
    for offset in (nibbles + 5, size - 1):  # a nibble byte, the last escape
        raw = path.read_bytes()
        _patched(path, offset, bytes([raw[offset] ^ 0x11]))
        assert not EndgameDatabase.open(path, rules).verify()
        _patched(path, offset, raw[offset : offset + 1])
        assert EndgameDatabase.open(path, rules).verify()


def test_radix_checksum_covers_every_section(tmp_path: Path) -> None:
    rules = Rules(houses=2)
    path = tmp_path / "r.egdb"
    size = build(path, rules, 30, progress=False).file_bytes
    db = EndgameDatabase.open(path, rules)
    assert db.verify()
    layout = radix_layout(2, 30, db.header.escapes, db.header.far)
    sections = ("window", "words", "blocks", "supers", "codes", "code_blocks")
    for offset in [HEADER_SIZE + layout[name] + 1 for name in sections] + [size - 1]:
        raw = path.read_bytes()
        _patched(path, offset, bytes([raw[offset] ^ 0x11]))
        assert not EndgameDatabase.open(path, rules).verify(), offset
        _patched(path, offset, raw[offset : offset + 1])
        assert EndgameDatabase.open(path, rules).verify()


def test_cli_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kalah_core.cli import main

    for fmt, version, bits in (("byte", 2, 8), ("packed", 3, 4), ("radix", 4, 3)):
        path = tmp_path / f"{fmt}.egdb"
        args = ["egdb", "build", "--seeds", "16", "--houses", "2", "--format", fmt]
        assert main([*args, "-o", str(path), "--json", "--quiet"]) == 0
        built = json.loads(capsys.readouterr().out)
        assert (built["bits"], built["bytes"]) == (bits, path.stat().st_size)
        assert main(["egdb", "info", str(path), "--verify", "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert (info["format_version"], info["bits"], info["verified"]) == (version, bits, True)
        assert info["bytes"] == path.stat().st_size and info["escapes"] == built["escapes"]
