"""The deep book: every record's bounds hold (checked against exact solves on small boards),
its estimates are those of a search of the same depth, the engine answers from it only within
its budgets and labels the answer, and the shipped file loads."""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import pytest

from kalah_core import deepbook
from kalah_core.book import BookError
from kalah_core.budget import DEEP_BOOK_MS
from kalah_core.cli import main
from kalah_core.deepbook import DeepBook, DeepSection, deep_key, key_position, lead
from kalah_core.deepbook_build import DeepBudget, back_up, build_deep_section, deep_record, levels
from kalah_core.game import Game, legal_moves, play
from kalah_core.position import Position
from kalah_core.rules import PRESETS, Rules
from kalah_core.solver import Engine, Snapshot
from kalah_core.tasks import LocalExecutor

# Small boards of the 6-seed presets' rules: piet-hein's empty capture, kalah-ru's
# mover-empty, empty-side and majority, and KGP's standard rules with majority.
SMALL = {
    "piet-hein": Rules(houses=4, seeds=3, capture="always"),
    "kalah-ru": Rules(houses=4, seeds=3, end="mover-empty", remaining="empty-side", majority=True),
    "kgp": Rules(houses=4, seeds=3, majority=True),
}
BUDGET = DeepBudget(estimate_nodes=1_500, bounds_nodes=1_500, tt_mb=4)
SOWINGS = 2


@cache
def small_section(name: str) -> DeepSection:
    return build_deep_section(SMALL[name], SOWINGS, [BUDGET], stream=io.StringIO())


@cache
def exact_gains(name: str, key: bytes) -> dict[int, int]:
    """Every move's exact future gain, from an unbounded solve."""
    rules = SMALL[name]
    position = key_position(key, rules)
    analysis = Engine(tt_mb=4).analyse(position, rules)
    assert analysis.exact
    return {int(m.move): m.value - lead(position) for m in analysis.moves}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_record_is_built_and_its_bounds_hold(name: str) -> None:
    section = small_section(name)
    rules = SMALL[name]
    wanted = {k for level in levels(rules, SOWINGS) for k in level}
    assert set(section.records) == wanted and section.sowings == SOWINGS
    for key, record in section.records.items():
        gains = exact_gains(name, key)
        assert {m.house for m in record.moves} == set(gains)
        for m in record.moves:
            assert m.lower <= gains[m.house] <= m.upper, (key.hex(), m)
        assert record.lower <= max(gains.values()) <= record.upper
        assert record.lower == max(m.lower for m in record.moves)
        assert record.upper == max(m.upper for m in record.moves)
        assert (record.depth is None) == (record.lower == record.upper)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_estimates_are_a_search_of_the_same_depth(name: str) -> None:
    rules = SMALL[name]
    inexact = 0
    for key, record in small_section(name).records.items():
        if record.depth is None:
            continue
        inexact += 1
        position = key_position(key, rules)
        search = Engine(tt_mb=4).analyse(position, rules, depth=record.depth)
        got = {int(m.move): m.value - lead(position) for m in search.moves}
        assert got == {m.house: m.estimate for m in record.moves}, key.hex()
    assert inexact  # the budgets are small enough to leave records unproven


@pytest.mark.parametrize("name", sorted(SMALL))
def test_back_up_only_narrows_and_is_settled(name: str) -> None:
    section = small_section(name)
    again = back_up(SMALL[name], section.records)
    assert again == section.records  # already backed up: a fixed point
    rules = SMALL[name]
    # A record's move leading to another record is bounded by that record's bounds.
    for key, record in section.records.items():
        position = key_position(key, rules)
        for m in record.moves:
            result = play(position, rules, m.house)
            child = None if result.over else section.records.get(deep_key(result.after, rules))
            if child is None:
                continue
            c = lead(result.after)
            low, high = child.lower + c, child.upper + c
            if not result.extra_turn:
                low, high = -high, -low
            assert m.lower >= low - lead(position) and m.upper <= high - lead(position)


def test_a_build_on_spawned_workers_equals_one_in_process() -> None:
    rules = SMALL["kgp"]
    pool = LocalExecutor(2)  # the task kind deepbook.record on two spawned processes
    mapped = build_deep_section(rules, 1, [BUDGET], executor=pool, stream=io.StringIO())
    plain = build_deep_section(rules, 1, [BUDGET], stream=io.StringIO())
    assert mapped.records == plain.records


def test_a_checkpoint_resumes(tmp_path: Path) -> None:
    rules = SMALL["piet-hein"]
    path = tmp_path / "ck.jsonl"
    first = build_deep_section(rules, 1, [BUDGET], checkpoint=path, stream=io.StringIO())
    lines = path.read_text().splitlines()
    assert len(lines) == len(first.records)
    out = io.StringIO()
    again = build_deep_section(rules, 1, [BUDGET], checkpoint=path, stream=out)
    assert again.records == first.records
    assert "sowing" not in out.getvalue()  # nothing searched again
    assert len(path.read_text().splitlines()) == len(lines)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_the_engine_answers_from_the_deep_book_and_labels_it(name: str) -> None:
    rules = SMALL[name]
    section = small_section(name)
    book = DeepBook([section])
    engine = Engine(tt_mb=4, deep_book=book)
    for key, record in section.records.items():
        position = key_position(key, rules)
        answer = engine.analyse(position, rules, time_ms=1000)
        diff = lead(position)
        assert answer.extra["book"]["kind"] == "deep"
        assert answer.nodes == 0
        assert (answer.lower, answer.upper) == (record.lower + diff, record.upper + diff)
        assert answer.exact == (record.lower == record.upper)
        assert answer.depth == record.depth
        assert answer.lower <= answer.value <= answer.upper
        by_house = {m.house: m for m in record.moves}
        for m in answer.moves:
            r = by_house[int(m.move)]
            assert (m.lower, m.upper) == (r.lower + diff, r.upper + diff)
            assert m.exact == (r.lower == r.upper)
            assert m.value == min(max(r.estimate + diff, m.lower), m.upper)
        assert answer.best_moves[0] == answer.moves[0].move
        assert answer.pv and answer.pv[0][0] == answer.moves[0].move
        node = position
        for turn in answer.pv:  # the line is legal
            for move in turn:
                assert move in legal_moves(node, rules)
                node = play(node, rules, move).after


def test_long_and_unbounded_budgets_search() -> None:
    rules = SMALL["kgp"]
    book = DeepBook([small_section("kgp")])
    engine = Engine(tt_mb=4, deep_book=book)
    start = Position.start(rules)
    assert engine.analyse(start, rules, time_ms=1000).extra["book"]["kind"] == "deep"
    assert engine.analyse(start, rules, nodes=1000).extra["book"]["kind"] == "deep"
    for answer in (
        engine.analyse(start, rules, time_ms=DEEP_BOOK_MS * 2, nodes=2_000),
        engine.analyse(start, rules),
        engine.analyse(start, rules, depth=3),
    ):
        assert "book" not in answer.extra


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_long_budget_keeps_the_books_proven_bounds(name: str) -> None:
    """A budget over DEEP_BOOK_MS searches, and its bounds are those it proved narrowed by
    the record's: never wider than the book's, and still around the exact values."""
    rules = SMALL[name]
    section = small_section(name)
    with_book = Engine(tt_mb=4, deep_book=DeepBook([section]))
    narrowed = 0
    for key, record in section.records.items():
        position = key_position(key, rules)
        diff = lead(position)
        gains = exact_gains(name, key)
        budget = {"time_ms": DEEP_BOOK_MS * 2, "nodes": 150}
        answer = with_book.analyse(position, rules, **budget)
        assert "book" not in answer.extra  # it searched
        assert record.lower + diff <= answer.lower <= answer.upper <= record.upper + diff
        assert answer.lower <= max(gains.values()) + diff <= answer.upper
        by_house = {m.house: m for m in record.moves}
        for m in answer.moves:
            r = by_house[int(m.move)]
            assert r.lower + diff <= m.lower <= gains[r.house] + diff <= m.upper <= r.upper + diff
        alone = Engine(tt_mb=4).analyse(position, rules, **budget)
        narrowed += (alone.lower, alone.upper) != (answer.lower, answer.upper)
    assert narrowed  # the searches alone prove less somewhere: the book's bounds count


BEYOND_REACH = Rules(houses=6, seeds=6, capture="always")
"""piet-hein's rules: 72 seeds, no proof in reach of a long budget without a database."""


@cache
def shallow_start_section() -> DeepSection:
    """A deep book of BEYOND_REACH's start only, its estimate a few sowings deep."""
    budget = DeepBudget(estimate_nodes=20_000, bounds_nodes=2_000, tt_mb=4)
    return build_deep_section(BEYOND_REACH, 0, [budget], stream=io.StringIO())


def test_a_long_budget_beyond_reach_starts_from_the_record_and_deepens_past_it() -> None:
    """Issue 50: a budget over DEEP_BOOK_MS on a position the deep book holds, no proof in
    sight: the record is shown first, then only deeper estimates, each that of a search of
    the same depth; the bounds are the record's or narrower."""
    rules = BEYOND_REACH
    start = Position.start(rules)
    section = shallow_start_section()
    record = section.records[deep_key(start, rules)]
    assert record.depth is not None and record.lower < record.upper
    engine = Engine(tt_mb=4, deep_book=DeepBook([section]))
    shots: list[Snapshot] = []
    engine.on_deepened = shots.append
    answer = engine.analyse(start, rules, time_ms=DEEP_BOOK_MS * 2, nodes=300_000)
    first = shots[0]
    assert (first.source, first.depth, first.nodes) == ("deep book", record.depth, 0)
    assert (first.lower, first.upper) == (record.lower, record.upper)  # empty stores: no lead
    assert {m.move: m.value for m in first.moves} == {m.house: m.estimate for m in record.moves}
    assert first.pv[0][0] == record.pv[0]
    depths = [shot.depth for shot in shots]
    assert depths == list(range(record.depth, record.depth + len(shots)))
    assert all(shot.source == "search" for shot in shots[1:])
    assert answer.depth == depths[-1] > record.depth and "book" not in answer.extra
    search = Engine(tt_mb=4).analyse(start, rules, depth=answer.depth)
    assert {m.move: m.value for m in answer.moves} == {m.move: m.value for m in search.moves}
    assert record.lower <= answer.lower <= answer.value <= answer.upper <= record.upper


def test_a_long_budget_spent_before_passing_the_record_answers_with_it() -> None:
    """Never shallower than the deep book: a long budget that ends before it deepens past the
    record answers with the record (labelled as the book's), as the shipped piet-hein start
    does for a node budget too small to deepen past its depth 19."""
    shipped = deepbook.shipped()
    rules = PRESETS["piet-hein"]
    start = Position.start(rules)
    for book, budget in (
        (DeepBook([shallow_start_section()]), 1_000),
        (shipped, 50_000),
    ):
        record = book.analysis(start, rules)
        assert record is not None and not record.exact
        engine = Engine(tt_mb=4, deep_book=book)
        shots: list[Snapshot] = []
        engine.on_deepened = shots.append
        answer = engine.analyse(start, rules, time_ms=DEEP_BOOK_MS * 2, nodes=budget)
        assert [(s.source, s.depth) for s in shots] == [("deep book", record.depth)]
        assert answer.nodes > 0 and answer.extra == record.extra
        assert (answer.value, answer.lower, answer.upper, answer.depth) == (
            record.value,
            record.lower,
            record.upper,
            record.depth,
        )
        assert [(m.move, m.value, m.lower, m.upper) for m in answer.moves] == [
            (m.move, m.value, m.lower, m.upper) for m in record.moves
        ]
        assert answer.pv == record.pv and answer.best_moves == record.best_moves


def test_records_serve_only_their_rules_and_stores() -> None:
    book = DeepBook([small_section("kgp")])
    rules = SMALL["kgp"]
    start = Position.start(rules)
    assert book.record(start, rules) is not None
    assert book.record(start, rules.replace(majority=False)) is None
    assert book.record(start, rules.replace(seeds=4)) is None
    # Under majority the stores are part of the key: the same houses with other stores miss.
    moved = Position(start.south, start.north, (1, 0), start.to_move, False)
    assert book.record(moved, rules) is None
    # Outside majority the houses are the key, and the value follows the stores.
    pie = DeepBook([small_section("piet-hein")])
    rules = SMALL["piet-hein"]
    start = Position.start(rules)
    moved = Position(start.south, start.north, (3, 1), start.to_move, False)
    a, b = pie.analysis(start, rules), pie.analysis(moved, rules)
    assert a is not None and b is not None
    assert (b.lower, b.upper, b.value) == (a.lower + 2, a.upper + 2, a.value + 2)


def test_a_file_round_trips_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    book = DeepBook([small_section(n) for n in sorted(SMALL)])
    path = tmp_path / "deep.xz"
    book.save(path)
    again = DeepBook.load(path)
    assert {k: s.records for k, s in again.sections.items()} == {
        k: s.records for k, s in book.sections.items()
    }
    path.write_bytes(b"not a book")
    with pytest.raises(BookError):
        DeepBook.load(path)


def test_the_book_deep_command_builds_a_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KALAH_EGDB_PATH", "off")
    path = tmp_path / "deep.xz"
    rules = ("--houses", "4", "--seeds", "3", "--majority")
    budgets = ("--estimate-mnodes", "0.0015", "--bounds-mnodes", "0.0015")
    argv = ["book", "deep", *rules, "--sowings", "1", *budgets, "--tt-mb", "4", "-o", str(path)]
    assert main([*argv, "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert (built["sowings"], built["positions"]) == (1, 1 + 4)
    section = DeepBook.load(path).sections[SMALL["kgp"].key]
    expected = build_deep_section(SMALL["kgp"], 1, [BUDGET], stream=io.StringIO())
    assert section.records == expected.records  # node budgets: the same book every time


def test_a_record_does_not_depend_on_the_records_made_before_it() -> None:
    """deep_record is a pure function of (rules, board, budget): the same records whatever
    the order, so executors may hand positions out in any order."""
    rules = SMALL["kalah-ru"]
    keys = [k for level in levels(rules, SOWINGS) for k in level]
    forward = [deep_record(rules, k, BUDGET) for k in keys]
    backward = [deep_record(rules, k, BUDGET) for k in reversed(keys)]
    assert forward == backward[::-1]


def test_book_deep_after_adds_the_records_of_the_games_positions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--after``: the records of the positions the games lead to, past the section's
    sowings, each the same pure function as a build's; the section's own records stay, and
    the engine answers from the new ones."""
    monkeypatch.setenv("KALAH_EGDB_PATH", "off")
    rules = SMALL["kgp"]
    path = tmp_path / "deep.xz"
    DeepBook([build_deep_section(rules, 1, [BUDGET], stream=io.StringIO())]).save(path)
    options = ("--houses", "4", "--seeds", "3", "--majority", "--tt-mb", "4", "-o", str(path))
    budgets = ("--estimate-mnodes", "0.0015", "--bounds-mnodes", "0.0015")
    games = ["1-1, 2-", "1-1, 2-1"]  # 3 sowings, then 4: both past the section's 1
    checkpoint = tmp_path / "after.jsonl"
    argv = ["book", "deep", *options, *budgets, "--checkpoint", str(checkpoint), "--after"]
    assert main([*argv, *games, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 2
    section = DeepBook.load(path).sections[rules.key]
    built = build_deep_section(rules, 1, [BUDGET], stream=io.StringIO()).records
    keys = [deep_key(Game.parse_fi(g, rules).position, rules) for g in games]
    assert set(section.records) == set(built) | set(keys) and section.sowings == 1
    made = {k: deep_record(rules, k, BUDGET) for k in keys}
    assert section.records == back_up(rules, {**built, **made})
    # the first leads to the second: its bounds narrowed by the back-up, its estimate kept
    assert section.records[keys[1]] == made[keys[1]]
    assert section.records[keys[0]].moves != made[keys[0]].moves
    assert [m.estimate for m in section.records[keys[0]].moves] == [
        m.estimate for m in made[keys[0]].moves
    ]
    assert all(section.records[k] == built[k] for k in built)
    assert [n["games"] for n in section.build["after"]] == [games]
    position = Game.parse_fi(games[1], rules).position
    answer = DeepBook.load(path).analysis(position, rules)
    assert answer is not None and answer.extra["book"]["kind"] == "deep"
    # again: nothing to add, the file's records and notes as they were
    assert main([*argv, *games, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 0
    assert DeepBook.load(path).sections[rules.key] == section
    # from the checkpoint into a fresh copy of the book: the same records and games noted
    fresh = tmp_path / "fresh.xz"
    DeepBook([build_deep_section(rules, 1, [BUDGET], stream=io.StringIO())]).save(fresh)
    assert main([*argv, *games, "-o", str(fresh)]) == 0
    resumed = DeepBook.load(fresh).sections[rules.key]
    assert resumed.records == section.records
    assert [n["games"] for n in resumed.build["after"]] == [games]
    # one of --sowings and --after
    assert main(["book", "deep", *options, *budgets, "--sowings", "1", "--after", "1-"]) != 0
