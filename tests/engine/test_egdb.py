"""The endgame database against a brute force over the reference rules and against the solver;
its index, its file (round trip, header checks, damage) and its command line."""

from __future__ import annotations

import itertools
import json
import os
import random
from collections.abc import Iterator
from math import comb
from pathlib import Path

import pytest

from kalah_core import InvalidPositionError, InvalidRulesError, Position, Rules, Side
from kalah_core import reference as ref
from kalah_core.cli import main
from kalah_core.egdb import (
    HEADER_SIZE,
    EndgameDatabase,
    EndgameDatabaseError,
    build,
    default_path,
    entry_count,
    progress_path,
    read_build_seconds,
    read_header,
    rule_key,
)
from kalah_core.solver import Engine

ENGINE = Engine(tt_mb=8)

VARIANTS = [
    {"capture": capture, "end": end, "remaining": remaining}
    for capture in ("nonempty", "always")
    for end in ("either-side-empty", "mover-empty")
    for remaining in ("owner", "empty-side")
]
VARIANT_IDS = [f"{v['capture']}-{v['end']}-{v['remaining']}" for v in VARIANTS]

# (houses, N) of the exhaustive comparisons: every board of each database (the largest runs
# for seconds: in the system tier).
LARGEST = pytest.param(4, 6, marks=pytest.mark.system, id="4-6")
SIZES = [(1, 10), (2, 8), (3, 7), LARGEST]


def boards(houses: int, max_seeds: int) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    for cells in itertools.product(range(max_seeds + 1), repeat=2 * houses):
        if sum(cells) <= max_seeds:
            yield cells[:houses], cells[houses:]


@pytest.fixture(scope="module")
def db_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("egdb")


_built: dict[tuple[Path, Rules, int], EndgameDatabase] = {}


def database(directory: Path, rules: Rules, max_seeds: int) -> EndgameDatabase:
    """A database built once per module (threads=2 so that the parallel build is tested)."""
    key = (directory, rules, max_seeds)
    if key not in _built:
        path = default_path(rules, max_seeds, directory)
        build(path, rules, max_seeds, progress=False, threads=2)
        _built[key] = EndgameDatabase.open(path, rules)
    return _built[key]


# --------------------------------------------------------------------- values


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize(("houses", "max_seeds"), SIZES)
def test_every_board_equals_brute_force(
    db_dir: Path, houses: int, max_seeds: int, variant: dict[str, str]
) -> None:
    rules = Rules(houses=houses, **variant)
    db = database(db_dir, rules, max_seeds)
    count = 0
    for south, north in boards(houses, max_seeds):
        position = Position(south, north, (0, 0), Side.SOUTH)
        assert db.lookup(position) == ref.value(position, rules), position
        count += 1
    assert count == entry_count(houses, max_seeds) == db.entries


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
def test_values_with_stores_and_either_side_to_move(db_dir: Path, variant: dict[str, str]) -> None:
    """lookup adds the store difference; North to move reads the board from North's side."""
    rules = Rules(houses=3, **variant)
    db = database(db_dir, rules, 7)
    rng = random.Random(7)
    for south, north in rng.sample(list(boards(3, 7)), 150):
        stores = (rng.randint(0, 5), rng.randint(0, 5))
        for side in Side:
            position = Position(south, north, stores, side)
            assert db.lookup(position) == ref.value(position, rules), position


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize(("houses", "max_seeds"), [(2, 8), (3, 7), LARGEST])
def test_values_equal_the_solver(
    db_dir: Path, houses: int, max_seeds: int, variant: dict[str, str]
) -> None:
    rules = Rules(houses=houses, **variant)
    db = database(db_dir, rules, max_seeds)
    rng = random.Random(houses * 100 + max_seeds)
    for south, north in rng.sample(list(boards(houses, max_seeds)), 120):
        position = Position(south, north, (rng.randint(0, 4), rng.randint(0, 4)), Side.NORTH)
        assert db.lookup(position) == ENGINE.analyse(position, rules).value, position


@pytest.mark.parametrize("preset", ["kalah", "kalaha", "piet-hein"])
def test_six_houses_equal_the_solver(db_dir: Path, preset: str) -> None:
    rules = Rules.preset(preset)
    db = database(db_dir, rules, 10)
    rng = random.Random(preset)
    for _ in range(150):
        n = rng.randint(1, 10)
        cells = [0] * 12
        for _ in range(n):
            cells[rng.randrange(12)] += 1
        position = Position(tuple(cells[:6]), tuple(cells[6:]), (rng.randint(0, 20), 3))
        assert db.lookup(position) == ENGINE.analyse(position, rules).value, position


def test_rules_that_share_a_database(db_dir: Path) -> None:
    """seeds and pie do not change a database: kalah-pie with 6 seeds uses kalah's."""
    kalah = Rules.preset("kalah")
    other = Rules.preset("kalah-pie", seeds=6)
    assert rule_key(kalah) == rule_key(other)
    assert default_path(kalah, 10) == default_path(other, 10)
    db = database(db_dir, kalah, 10)
    assert EndgameDatabase.open(db.path, other).max_seeds == 10
    for changed in ({"capture": "always"}, {"end": "mover-empty"}, {"remaining": "empty-side"}):
        assert default_path(kalah.replace(**changed), 10) != default_path(kalah, 10)
    assert default_path(kalah.replace(houses=5), 10) != default_path(kalah, 10)
    assert default_path(kalah, 10).name == "kalah-egdb-h6-nonempty-either-owner-n10.egdb"


def test_parallel_and_serial_builds_agree(tmp_path: Path) -> None:
    rules = Rules()
    serial = build(tmp_path / "a.egdb", rules, 11, progress=False, threads=1)
    parallel = build(tmp_path / "b.egdb", rules, 11, progress=False, threads=2)
    assert serial.threads == 1 and parallel.threads == 2
    assert (tmp_path / "a.egdb").read_bytes() == (tmp_path / "b.egdb").read_bytes()


# --------------------------------------------------------------------- index


@pytest.mark.parametrize(("houses", "max_seeds"), [(1, 6), (2, 6), (3, 5), (4, 4), (6, 3)])
def test_rank_walk_and_unrank_agree(db_dir: Path, houses: int, max_seeds: int) -> None:
    table = database(db_dir, Rules(houses=houses), max_seeds).table
    for n in range(max_seeds + 1):
        walk = table.walk(n)
        assert len(walk) == comb(n + 2 * houses - 1, 2 * houses - 1)
        assert len(set(walk)) == len(walk)
        for r, (mine, theirs) in enumerate(walk):
            assert sum(mine) + sum(theirs) == n
            assert table.rank(mine, theirs) == r
            assert table.board_at(n, r) == (mine, theirs)


def test_rank_of_eight_houses(tmp_path: Path) -> None:
    """Every cell of the 16 is used: ranks of a level are 0..size-1 exactly."""
    build(tmp_path / "h8.egdb", Rules(houses=8), 3, progress=False)
    table = EndgameDatabase.open(tmp_path / "h8.egdb", Rules(houses=8)).table
    for n in range(4):
        ranks = sorted(table.rank(m, t) for m, t in table.walk(n))
        assert ranks == list(range(comb(n + 15, 15)))


# --------------------------------------------------------------------- files


def test_file_round_trip(tmp_path: Path) -> None:
    rules = Rules(houses=4, capture="always", end="mover-empty", remaining="empty-side")
    path = tmp_path / "sub" / "db.egdb"
    stats = build(path, rules, 6, progress=False)
    assert stats.path == path and stats.entries == comb(14, 8)
    header = read_header(path)
    assert path.stat().st_size == stats.file_bytes == HEADER_SIZE + header.body_bytes()
    assert (header.version, header.bits, stats.bits) == (4, 3, 3)
    # no temporary file left; the build's record beside the file
    assert sorted(p.name for p in path.parent.iterdir()) == ["db.egdb", "db.egdb.build.json"]
    assert read_build_seconds(path) == round(stats.seconds, 1)
    assert len(stats.level_seconds) == 7
    header = read_header(path)
    assert header.max_seeds == 6 and header.entries == stats.entries
    assert header.key == rule_key(rules)
    db = EndgameDatabase.open(path, rules)
    assert (db.houses, db.max_seeds, db.entries) == (4, 6, stats.entries)
    assert db.verify()
    assert "h4-always-mover-empty-side" in repr(db)
    # Rebuilding replaces the file atomically; the open mapping keeps reading the old one.
    before = db.lookup(Position((1, 0, 2, 0), (0, 3, 0, 0)))
    build(path, rules, 5, progress=False)
    assert db.lookup(Position((1, 0, 2, 0), (0, 3, 0, 0))) == before
    assert EndgameDatabase.open(path, rules).max_seeds == 5


def test_progress_bar(tmp_path: Path) -> None:
    import io

    stream = io.StringIO()
    build(tmp_path / "p.egdb", Rules(houses=3), 6, progress=True, stream=stream)
    text = stream.getvalue()
    assert "100.0%" in text and "ETA" in text and "p.egdb" in text
    quiet = io.StringIO()
    build(tmp_path / "q.egdb", Rules(houses=3), 6, progress=False, stream=quiet)
    assert quiet.getvalue() == ""


def test_wrong_rules_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.egdb"
    build(path, Rules(houses=3), 5, progress=False)
    for rules in (
        Rules(houses=4),
        Rules(houses=3, capture="always"),
        Rules(houses=3, end="mover-empty"),
        Rules(houses=3, remaining="empty-side"),
    ):
        with pytest.raises(EndgameDatabaseError, match="was built for rules h3-nonempty"):
            EndgameDatabase.open(path, rules)
    EndgameDatabase.open(path, Rules(houses=3, seeds=1, pie=True))


MAJORITY_VARIANTS = [
    {"capture": "nonempty", "end": "mover-empty", "remaining": "empty-side"},  # kalah-ru's
    {"capture": "nonempty", "end": "either-side-empty", "remaining": "owner"},  # kgp's
    {"capture": "always", "end": "mover-empty", "remaining": "owner"},
]


@pytest.mark.parametrize("variant", MAJORITY_VARIANTS, ids=lambda v: "-".join(v.values()))
@pytest.mark.parametrize(("houses", "seeds", "max_seeds"), [(2, 2, 8), (3, 2, 7), (3, 3, 6)])
def test_a_majority_database_equals_brute_force_at_every_store(
    db_dir: Path, houses: int, seeds: int, max_seeds: int, variant: dict[str, str]
) -> None:
    """Under majority every board holds a value for each store the mover may have: each one
    equals the reference's value of the position, with either side to move."""
    rules = Rules(houses=houses, seeds=seeds, majority=True, **variant)
    db = database(db_dir, rules, max_seeds)
    total = 2 * houses * seeds
    assert db.key.total == total and db.header.version == 5
    count = 0
    for south, north in boards(houses, max_seeds):
        n = sum(south) + sum(north)
        if n > total:
            continue
        for store in range(max(0, total - n - total // 2), min(total // 2, total - n) + 1):
            count += 1
            for side in Side:
                stores = (store, total - n - store)
                position = Position(
                    south, north, stores if side is Side.SOUTH else stores[::-1], side
                )
                assert db.lookup(position) == ref.value(position, rules), position
    assert count == entry_count(houses, max_seeds, total) == db.entries


def test_a_majority_database_serves_its_own_game_only(db_dir: Path, tmp_path: Path) -> None:
    rules = Rules(houses=3, seeds=2, majority=True, end="mover-empty", remaining="empty-side")
    db = database(db_dir, rules, 7)
    assert str(db.key) == "h3-nonempty-mover-empty-side-majority12"
    for other in (
        Rules(houses=3, seeds=3, majority=True, end="mover-empty", remaining="empty-side"),
        Rules(houses=3, seeds=2, end="mover-empty", remaining="empty-side"),
    ):
        with pytest.raises(EndgameDatabaseError, match="was built for rules"):
            EndgameDatabase.open(db.path, other)
    plain = tmp_path / "plain.egdb"
    build(plain, Rules(houses=3, end="mover-empty", remaining="empty-side"), 3, progress=False)
    with pytest.raises(EndgameDatabaseError, match="was built for rules"):
        EndgameDatabase.open(plain, rules)
    other_total = Position((1, 0, 0), (0, 0, 1), (5, 6))  # 13 seeds in the game
    with pytest.raises(InvalidPositionError, match="games of 12"):
        db.lookup(other_total)
    over = Position((1, 0, 0), (0, 0, 1), (7, 3))  # 7 of 12 in a store: over
    with pytest.raises(InvalidPositionError, match="ended the game"):
        db.lookup(over)
    assert not db.covers(other_total) and not db.covers(over)
    assert db.covers(Position((1, 0, 0), (0, 0, 1), (6, 4)))  # 6 of 12: not more than half
    with pytest.raises(InvalidRulesError, match="one byte an entry"):
        build(tmp_path / "m.egdb", rules, 4, progress=False, format="radix")
    assert not list(tmp_path.glob("m.egdb*"))


def test_the_search_with_a_majority_database_equals_the_search_without(db_dir: Path) -> None:
    """kalah-ru's board and total (6 houses, 72 seeds): positions whose every line passes
    through the database give the same values and moves' values with it as without."""
    rules = Rules.preset("kalah-ru")
    db = database(db_dir, rules, 8)
    with_db = Engine(tt_mb=8, databases=[db])
    rng = random.Random(72)
    probed = 0
    for _ in range(40):
        n = rng.randint(9, 13)
        cells = [0] * 12
        for _ in range(n):
            cells[rng.randrange(12)] += 1
        mine = rng.randint(72 - n - 36, 36)
        position = Position(
            tuple(cells[:6]), tuple(cells[6:]), (mine, 72 - n - mine), rng.choice(list(Side))
        )
        if ref.is_over(position, rules):
            continue
        want = ENGINE.analyse(position, rules)
        got = with_db.analyse(position, rules)
        assert got.exact and want.exact, position
        assert got.value == want.value, position
        assert [(m.move, m.value) for m in got.moves] == [(m.move, m.value) for m in want.moves]
        probed += 1
    assert probed >= 30


def _patched(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def test_damaged_files_are_refused(tmp_path: Path) -> None:
    rules = Rules(houses=3)
    path = tmp_path / "db.egdb"

    def fresh() -> None:
        build(path, rules, 5, progress=False)

    fresh()
    _patched(path, 0, b"NOTKALAH")
    with pytest.raises(EndgameDatabaseError, match="not a Kalah endgame database"):
        EndgameDatabase.open(path, rules)
    fresh()
    _patched(path, 8, (99).to_bytes(4, "little"))
    with pytest.raises(EndgameDatabaseError, match="format version 99"):
        EndgameDatabase.open(path, rules)
    fresh()
    _patched(path, 24, (12345).to_bytes(8, "little"))
    with pytest.raises(EndgameDatabaseError, match="damaged database header"):
        EndgameDatabase.open(path, rules)
    fresh()
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(EndgameDatabaseError, match="truncated"):
        EndgameDatabase.open(path, rules)
    fresh()
    path.write_bytes(path.read_bytes()[:10])
    with pytest.raises(EndgameDatabaseError, match="not a Kalah endgame database"):
        EndgameDatabase.open(path, rules)
    fresh()
    size = path.stat().st_size
    _patched(path, size - 3, b"\x55")
    db = EndgameDatabase.open(path, rules)
    assert not db.verify()
    with pytest.raises(EndgameDatabaseError, match="cannot read"):
        EndgameDatabase.open(tmp_path / "missing.egdb", rules)


def test_lookup_refuses_what_it_does_not_hold(db_dir: Path) -> None:
    rules = Rules(houses=3)
    db = database(db_dir, rules, 7)
    assert db.covers(Position((1, 2, 0), (0, 0, 4)))
    with pytest.raises(InvalidPositionError, match="at most 7"):
        db.lookup(Position((3, 3, 0), (0, 0, 4)))
    with pytest.raises(InvalidPositionError, match="3 houses"):
        db.lookup(Position((1, 1), (1, 1)))
    with pytest.raises(InvalidPositionError, match="swap"):
        db.lookup(Position((1, 1, 1), (1, 1, 1), (1, 0), Side.NORTH, True))
    assert not db.covers(Position((3, 3, 0), (0, 0, 4)))
    assert not db.covers(Position((1, 1, 1), (1, 1, 1), (1, 0), Side.NORTH, True))


def test_file_is_mapped_read_only_and_shared(db_dir: Path) -> None:
    db = database(db_dir, Rules(houses=4), 6)
    maps = Path(f"/proc/{os.getpid()}/maps").read_text().splitlines()
    mine = [line for line in maps if line.endswith(str(db.path))]
    assert mine and all(line.split()[1] == "r--s" for line in mine)


# --------------------------------------------------------------------- command line


def test_cli_build_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cli.egdb"
    args = ["egdb", "build", "--seeds", "6", "--houses", "3", "--capture", "always"]
    code = main([*args, "-o", str(path), "--json", "--quiet"])
    assert code == 0
    built = json.loads(capsys.readouterr().out)
    assert built["entries"] == comb(12, 6) and built["rules"] == "h3-always-either-owner"
    assert main(["egdb", "info", str(path), "--verify", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["max_seeds"] == 6 and info["capture"] == "always" and info["verified"] is True
    assert main(["egdb", "info", str(path)]) == 0
    assert "h3-always-either-owner" in capsys.readouterr().out
    ru = ["egdb", "build", "--seeds", "3", "--rules", "kalah-ru", "-o", str(path)]
    assert main([*ru, "--format", "radix"]) == 2
    assert "majority database is one byte an entry" in capsys.readouterr().err
    assert main([*ru, "--json", "--quiet"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["rules"] == "h6-nonempty-mover-empty-side-majority72"
    assert built["entries"] == entry_count(6, 3, 72)
    assert main(["egdb", "info", str(path), "--verify", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format_version"] == 5 and info["verified"] is True
    assert main(["egdb", "info", str(tmp_path / "none.egdb")]) == 2


def test_cli_default_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("KALAH_EGDB_PATH", "auto")  # the cache folder, where commands look
    assert main(["egdb", "build", "--seeds", "4", "--houses", "2", "--quiet"]) == 0
    assert (tmp_path / "kalah" / "kalah-egdb-h2-nonempty-either-owner-n4.egdb").exists()
    capsys.readouterr()


def test_preload_and_probe_benchmark(db_dir: Path) -> None:
    db = database(db_dir, Rules(houses=4), 6)
    db.preload()
    seconds, total = db.table.probe_benchmark(1000, 3)
    assert seconds >= 0 and isinstance(total, int)


def test_a_build_logs_each_level_and_writes_its_progress_into_a_new_folder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new" / "folder" / "small.egdb"
    lines: list[str] = []
    stats = build(path, Rules(houses=3), 6, progress=False, progress_file=True, log=lines.append)
    assert stats.path == path and path.exists()
    assert not progress_path(path).exists(), "the progress file is removed at the end"
    assert [line.split(" done")[0] for line in lines] == [
        f"small.egdb: level {n}/6" for n in range(7)
    ]
    assert "100.0% of" in lines[-1]


def test_boards_beyond_eight_houses_have_no_database(tmp_path: Path) -> None:
    """Databases hold a byte a house on at most 8 houses: a bigger board is refused with the
    option named, and an engine searches it without one."""
    with pytest.raises(InvalidRulesError) as error:
        build(tmp_path / "twelve.egdb", Rules(houses=12, seeds=1), 3, progress=False)
    assert error.value.option == "houses" and "1..8" in str(error.value)
    assert not (tmp_path / "twelve.egdb").exists()
