"""The transposition table starts small and grows as it fills, up to the size it was given:
growth keeps every entry where a probe finds it, happens inside a search on one thread, and
a search on several threads has the whole table from its start."""

import pytest

from kalah_core._search import Searcher
from kalah_core.position import Position
from kalah_core.reference import is_over, legal_moves, play
from kalah_core.rules import Rules

MIB = 1024 * 1024


def positions_near(start: Position, rules: Rules, plies: int) -> list[Position]:
    """Every position within ``plies`` moves of ``start`` that is not over."""
    found, frontier = [start], [start]
    for _ in range(plies):
        frontier = [
            child
            for p in frontier
            for move in legal_moves(p, rules)
            if not is_over(child := play(p, rules, move)[0], rules)
        ]
        found += frontier
    return found


def test_growth_steps_up_to_the_cap() -> None:
    s = Searcher(64, start_mb=1)
    assert (s.size_bytes, s.table_bytes) == (64 * MIB, 1 * MIB)
    sizes = []
    while s.grow_table():
        sizes.append(s.table_bytes // MIB)
    assert sizes == [4, 16, 64]
    assert s.table_bytes == s.size_bytes
    capped = Searcher(48)  # the cap is a power of two buckets: 32 MiB
    assert (capped.size_bytes, capped.table_bytes) == (32 * MIB, 16 * MIB)
    assert capped.grow_table() and capped.table_bytes == 32 * MIB
    assert not capped.grow_table()
    assert Searcher(8, start_mb=0).table_bytes == 8 * MIB  # 0: the cap from the start


@pytest.mark.parametrize("tt_mb", [-1, 0, 65537])
def test_a_size_out_of_range_is_refused(tt_mb: int) -> None:
    with pytest.raises(ValueError, match="tt_mb"):
        Searcher(tt_mb)


def test_growth_keeps_every_entry_where_probes_find_it() -> None:
    rules = Rules(houses=4, seeds=3)
    start = Position.start(rules)
    s = Searcher(16, start_mb=1)
    s.begin(start, rules)
    low, high, _, _ = s.mtdf(start, rules, 0, -24, 24, fresh=False)
    assert low == high and s.table_bytes == 1 * MIB  # a proof too small to grow it
    positions = positions_near(start, rules, 6)
    before = [s.table_bounds(p) for p in positions]
    assert sum(b is not None for b in before) >= 100
    while s.grow_table():
        s.begin(start, rules)
        assert [s.table_bounds(p) for p in positions] == before
    assert s.table_bytes == 16 * MIB


def test_a_search_grows_its_table_and_proves_the_same_value() -> None:
    rules = Rules(houses=4, seeds=4)
    start = Position.start(rules)
    values = []
    for start_mb in (1, 0):
        s = Searcher(8, start_mb=start_mb)
        s.begin(start, rules)
        low, high, _, _ = s.mtdf(start, rules, 0, -32, 32, fresh=False)
        values.append((low, high))
        assert s.table_bytes > 1 * MIB
    assert values[0] == values[1] and values[0][0] == values[0][1]


def test_a_parallel_search_has_the_whole_table() -> None:
    rules = Rules(houses=4, seeds=3)
    start = Position.start(rules)
    s = Searcher(8, start_mb=1)
    s.threads = 2
    s.begin(start, rules)
    s.mtdf(start, rules, 0, -24, 24, fresh=False)
    assert s.table_bytes == s.size_bytes == 8 * MIB
