"""The hypothesis strategies the property tests share: rule sets, valid positions, and
arbitrary JSON for the parsers."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from kalah_core import Position, Rules
from kalah_core.position import MAX_SEEDS, Side
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS

SMALL_HOUSES = 8
"""The one-word board's limits (``_board.pxd``); bigger positions go to the big board."""
SMALL_SEEDS = 255


def rules(
    *, max_houses: int = SMALL_HOUSES, max_seeds: int = 10, min_houses: int = 1
) -> st.SearchStrategy[Rules]:
    """Any rule set: every option, houses and start seeds within the given bounds."""
    return st.builds(
        Rules,
        houses=st.integers(min_houses, max_houses),
        seeds=st.integers(1, max_seeds),
        capture=st.sampled_from(["nonempty", "always"]),
        end=st.sampled_from(["either-side-empty", "mover-empty"]),
        remaining=st.sampled_from(["owner", "empty-side"]),
        majority=st.booleans(),
        pie=st.booleans(),
    )


@st.composite
def positions(draw: st.DrawFn) -> Position:
    """Any valid position: 1..MAX_HOUSES houses, at most MAX_SEEDS seeds, either side, any pie
    flag."""
    houses = draw(st.integers(1, MAX_HOUSES))
    total = draw(st.integers(0, MAX_SEEDS))
    cuts = sorted(
        draw(st.lists(st.integers(0, total), min_size=2 * houses + 1, max_size=2 * houses + 1))
    )
    counts = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    counts = draw(st.permutations(counts))
    south, north = tuple(counts[:houses]), tuple(counts[houses : 2 * houses])
    swap = draw(st.booleans())
    stores = (counts[-2], 0 if swap else counts[-1])
    return Position(south, north, stores, draw(st.sampled_from(Side)), swap)


def big_rules() -> st.SearchStrategy[Rules]:
    """Rule sets whose start is beyond the one-word board: 9..12 houses, or up to 24 seeds a
    house with more than 255 seeds in all (many laps: 24 seeds lap 6 houses once and more)."""
    return rules(min_houses=9, max_houses=MAX_HOUSES, max_seeds=MAX_START_SEEDS) | rules(
        min_houses=6, max_houses=MAX_HOUSES, max_seeds=MAX_START_SEEDS
    ).filter(lambda r: r.total_seeds > SMALL_SEEDS)


@st.composite
def rules_and_positions(
    draw: st.DrawFn,
    rules_strategy: st.SearchStrategy[Rules] | None = None,
    min_total: int = 0,
    max_total: int = SMALL_SEEDS,
) -> tuple[Rules, Position]:
    """Rules and a valid position under them: random counts, any total in the given range
    (by default what the one-word board holds; up to MAX_SEEDS for the big board)."""
    drawn = draw(rules() if rules_strategy is None else rules_strategy)
    h = drawn.houses
    total = draw(st.integers(min_total, max_total))
    # Cut [0, total] at 2h+1 random points: the 2h+2 counts (houses and stores) in sowing order.
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=2 * h + 1, max_size=2 * h + 1)))
    bounds = [0, *cuts, total]
    counts = [b - a for a, b in itertools.pairwise(bounds)]
    draw(st.randoms(use_true_random=False)).shuffle(counts)
    south, north = tuple(counts[:h]), tuple(counts[h + 1 : 2 * h + 1])
    stores = (counts[h], counts[2 * h + 1])
    to_move = draw(st.sampled_from(Side))
    swap = drawn.pie and stores[1] == 0 and draw(st.booleans())
    position = Position(south, north, stores, to_move, swap)
    assert position.is_valid(drawn)
    return drawn, position


@st.composite
def small_positions(draw: st.DrawFn) -> tuple[Position, Rules]:
    """Positions small enough for brute force: up to 4 houses, 11 seeds in houses."""
    drawn = draw(rules(max_houses=4, max_seeds=3))
    h = drawn.houses
    total = draw(st.integers(1, min(11, 3 * h)))
    cells = [0] * (2 * h)
    for _ in range(total):
        cells[draw(st.integers(0, 2 * h - 1))] += 1
    stores = (draw(st.integers(0, 6)), draw(st.integers(0, 6)))
    to_move = draw(st.sampled_from([Side.SOUTH, Side.NORTH]))
    swap = drawn.pie and stores[1] == 0 and draw(st.booleans())
    return Position(tuple(cells[:h]), tuple(cells[h:]), stores, to_move, swap), drawn


def json_values(
    *, max_leaves: int = 20, max_list: int = 9, max_text: int = 10
) -> st.SearchStrategy[object]:
    """Arbitrary JSON values (what a client may send where a structure is expected)."""
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=max_text),
        lambda inner: (
            st.lists(inner, max_size=max_list)
            | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def json_positions() -> st.SearchStrategy[dict[str, object]]:
    """Objects shaped like a position's JSON form, each key holding anything plausible."""
    return st.fixed_dictionaries(
        {},
        optional={
            key: json_values()
            | st.lists(st.integers(-2, 300), max_size=9)
            | st.sampled_from(["south", "north"])
            for key in ("south", "north", "stores", "to_move", "swap_available", "other")
        },
    )
