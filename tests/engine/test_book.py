"""The opening book: built small here and checked against the engine move by move; the
shipped book against the published values and the engine."""

from __future__ import annotations

import lzma
import random
import time
from pathlib import Path

import pytest

from kalah_core import SWAP, Position, Rules, legal_moves, play
from kalah_core.book import MAGIC, SHIPPED, Book, BookError, shipped
from kalah_core.book_build import build_section, derive, levels
from kalah_core.solver import Engine

SMALL_RULES = [
    Rules(houses=4, seeds=2),
    Rules(houses=4, seeds=2, pie=True),
    Rules(houses=4, seeds=2, capture="always", end="mover-empty"),
    Rules(houses=3, seeds=3, remaining="empty-side", pie=True),
]
DEPTH = 4


def positions_within(rules: Rules, depth: int) -> list[Position]:
    """Every position reachable in at most ``depth`` moves (swaps included), game not over."""
    found = {Position.start(rules)}
    level = set(found)
    for _ in range(depth):
        level = {
            result.after
            for position in level
            for move in legal_moves(position, rules)
            if not (result := play(position, rules, move)).over
        } - found
        found |= level
    return sorted(found, key=lambda p: p.compact())


@pytest.fixture(scope="module")
def small_book() -> Book:
    sections = {}
    for rules in SMALL_RULES:
        section = build_section(rules, DEPTH, [], presets=["test"])
        sections[section.key] = section
    return Book.from_bytes(Book(list(sections.values())).to_bytes())  # through the format


def test_pie_positions_include_the_swap(small_book: Book) -> None:
    rules = SMALL_RULES[1]
    position = play(Position.start(rules), rules, 1).after  # North may swap now
    values = small_book.move_values(position, rules)
    assert values is not None and SWAP in values


def test_a_pie_start_of_rules_the_book_lacks_is_searched() -> None:
    """South's first turn under pie was answered from the game ends alone when the book had no
    section for the rules, then failed looking the section up (a 500 schemathesis found)."""
    rules = Rules(houses=1, seeds=1, capture="always", end="mover-empty", pie=True)
    start = Position.start(rules)
    assert shipped().move_values(start, rules) is None
    analysis = Engine(tt_mb=1, book=shipped()).analyse(start, rules)
    assert analysis.exact and "book" not in analysis.extra


def test_a_book_hit_is_exact_instant_and_labelled(small_book: Book) -> None:
    rules = SMALL_RULES[0]
    analysis = Engine(tt_mb=8, book=small_book).analyse(Position.start(rules), rules)
    searched = Engine(tt_mb=8).analyse(Position.start(rules), rules)
    assert analysis.exact and analysis.nodes == 0
    assert analysis.extra["book"] == {"depth": DEPTH, "rules": "h4-nonempty-either-owner"}
    assert (analysis.value, analysis.best_moves) == (searched.value, searched.best_moves)
    assert analysis.pv and analysis.pv[0][0] in analysis.best_moves


def test_outside_the_book_the_engine_searches(small_book: Book) -> None:
    rules = SMALL_RULES[0]
    engine = Engine(tt_mb=8, book=small_book)
    far = Position((0, 1, 0, 2), (1, 0, 0, 1), (6, 5))
    assert small_book.move_values(far, rules) is None
    analysis = engine.analyse(far, rules)
    assert analysis.exact and "book" not in analysis.extra
    # Depth-limited searches are not answered from the book.
    start = engine.analyse(Position.start(rules), rules, depth=2)
    assert "book" not in start.extra


def test_an_interrupted_build_resumes_from_its_checkpoints(tmp_path: Path) -> None:
    rules = SMALL_RULES[0]
    ckpt = tmp_path / "book.ckpt"
    full = build_section(rules, DEPTH, [], checkpoint=ckpt)
    assert full.depth == DEPTH and (tmp_path / "book.ckpt.values").exists()
    # Lose pass 2 (every move of the frontier) and stop it at once: the frontier's values
    # from pass 1 still give every move of every board within DEPTH - 1 sowings.
    ckpt.unlink()
    shallower = build_section(rules, DEPTH, [], checkpoint=ckpt, until=time.time() - 1)
    within = {b for level in levels(rules, DEPTH - 1) for b in level}
    assert shallower.depth == DEPTH - 1
    assert {shallower[i] for i in range(len(shallower))} == within
    for board in within:
        assert shallower.gains(board) == full.gains(board)
    # Resumed without a deadline: the same book as the uninterrupted build.
    assert build_section(rules, DEPTH, [], checkpoint=ckpt) == full


def test_damaged_books_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "book.bin"
    path.write_bytes(b"not a book")
    with pytest.raises(BookError):
        Book.load(path)


# -- the shipped book -------------------------------------------------------------------------


def test_a_book_is_written_as_it_is_read_and_an_xz_one_still_reads(small_book: Book) -> None:
    """A book file is its records as they are probed (a process's start reads it with no
    unpacking); a book written xz-compressed, as they were before, still reads the same."""
    raw = small_book.to_bytes()
    assert raw.startswith(MAGIC) and SHIPPED.read_bytes().startswith(MAGIC)
    assert Book.from_bytes(lzma.compress(raw)).to_bytes() == raw


def test_the_shipped_book_gives_the_published_values() -> None:
    book = shipped()
    for preset, value in (("kalah", 8), ("kalah-pie", None), ("kalaha", None)):
        rules = Rules.preset(preset)
        assert book.move_values(Position.start(rules), rules) is not None, preset
        analysis = Engine(tt_mb=1, book=book).analyse(Position.start(rules), rules)
        assert analysis.exact and "book" in analysis.extra, preset
        if value is not None:
            assert analysis.value == value  # Rawlings: Kalah(6,4) = +8


def test_the_shipped_book_holds_every_board_to_its_depth_consistently() -> None:
    """Every board within a section's depth is held, and every board above the deepest level
    has the values its moves' boards give (the engine check of the deepest is ``slow``)."""
    book = shipped()
    for section in book.sections.values():
        rules = Rules.preset(section.presets[0]).replace(pie=False)
        found = levels(rules, section.depth)
        width, board_bytes = section.width, 2 * section.key.houses
        rows = (section.data[i : i + width] for i in range(0, len(section.data), width))
        gains = {row[:board_bytes]: row[board_bytes:] for row in rows}
        assert all(board in gains for level in found for board in level), section.key
        for level in found[:-1]:
            for board in level:
                assert derive(board, rules, gains) == gains[board], (section.key, board.hex())


@pytest.mark.slow
def test_shipped_book_positions_match_the_engine() -> None:
    """A sample of random lines to the book's depth: each last position's every move by a
    full search (minutes without a database: ``--run-slow``)."""
    book = shipped()
    rng = random.Random(14)
    engine = Engine(tt_mb=64)
    checked = 0
    for preset in ("kalah", "kalaha"):
        rules = Rules.preset(preset)
        depth = book.sections[next(k for k in book.sections if k.end == rules.end)].depth
        for _ in range(3):
            position = Position.start(rules)
            for _ in range(depth):
                result = play(position, rules, rng.choice(legal_moves(position, rules)))
                if result.over:
                    break
                position = result.after
            values = book.move_values(position, rules)
            assert values is not None, position.compact()
            analysis = engine.analyse(position, rules)
            assert values == {m.move: m.value for m in analysis.moves}, position.compact()
            checked += 1
    assert checked == 6


@pytest.mark.parametrize("rules", SMALL_RULES[:3:2], ids=lambda r: r.key)
def test_a_deeper_build_starts_from_an_earlier_book(rules: Rules) -> None:
    """An earlier book's records are not solved again, and give the values of the boards
    one sowing deeper: a build stopped before it solves anything still holds the earlier
    depth whole; a finished one equals a build from nothing."""
    full = build_section(rules, DEPTH, [])
    earlier = build_section(rules, DEPTH - 1, [])
    stopped = build_section(rules, DEPTH, [], until=time.time() - 1, known=earlier)
    assert stopped.depth == DEPTH - 1 and stopped.data == earlier.data
    # Nothing to solve when the earlier book holds the deeper one already.
    assert build_section(rules, DEPTH, [], until=time.time() - 1, known=full) == full
    deeper = build_section(rules, DEPTH, [], known=earlier)
    assert deeper == full


def test_a_build_from_another_book_keeps_its_sections(tmp_path: Path) -> None:
    from kalah_core.book import SHIPPED
    from kalah_core.cli import main

    out = tmp_path / "book.bin"
    small = ["book", "build", "--houses", "3", "--seeds", "2", "--depth", "2", "-o", str(out)]
    assert main([*small, "--from", "shipped"]) == 0
    built, shipped = Book.load(out), Book.load(SHIPPED)
    new = set(built.sections) - set(shipped.sections)
    assert len(new) == 1 and built.sections[new.pop()].depth == 2
    for key, section in shipped.sections.items():
        assert built.sections[key] == section
    assert main([*small, "--from", str(tmp_path / "none.bin")]) == 2
