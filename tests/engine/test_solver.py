"""The solver against a plain-Python brute force over the reference rules.

The brute force is :func:`kalah_core.reference.value` and ``move_values``: memoized minimax with
no pruning at all, the obviously-correct definition of the value (final store difference for
the player to move) and of the optimal moves.
"""

from __future__ import annotations

import inspect

import pytest
import strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from kalah_core import INFINITY, MAX_SEEDS, Position, Rules, Side, _bigboard, egdb, game
from kalah_core import reference as ref
from kalah_core._search import Searcher
from kalah_core.egdb import EndgameDatabase
from kalah_core.solver import Engine

ENGINE = Engine(tt_mb=8)


def test_principal_variation_replays_to_the_value() -> None:
    rules = Rules(houses=4, seeds=3)
    position = Position.start(rules)
    analysis = Engine(16).analyse(position, rules)
    node = position
    for turn in analysis.pv:
        for move in turn:
            node = ref.play(node, rules, move)[0]
    assert ref.is_over(node, rules), "an exact PV on a small game reaches the end"
    south, north = ref.final_score(node, rules)
    assert south - north == analysis.value


@pytest.mark.parametrize("preset", ["kalah", "kalaha", "kalah-ru", "piet-hein", "kalah-pie"])
def test_every_preset_solves_a_small_board(preset: str) -> None:
    rules = Rules.preset(preset, houses=3, seeds=2)
    position = Position.start(rules)
    analysis = Engine(8).analyse(position, rules)
    assert analysis.exact
    assert analysis.value == ref.value(position, rules)


def test_pie_swap_value_is_minus_the_same_board_without_swap() -> None:
    rules = Rules(houses=3, seeds=2, pie=True)
    after_first = ref.play(Position.start(rules), rules, 1)[0]
    assert after_first.swap_available and after_first.to_move is Side.NORTH
    analysis = Engine(8).analyse(after_first, rules)
    swap = next(m for m in analysis.moves if m.move == "swap")
    no_swap = Position(after_first.south, after_first.north, after_first.stores, Side.NORTH, False)
    assert swap.value == -ref.value(no_swap, rules)


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[Rules, EndgameDatabase]:
    """Small endgame databases (3 houses, up to 6 seeds in houses) for several rule sets."""
    folder = tmp_path_factory.mktemp("egdb")
    found = {}
    for capture in ("nonempty", "always"):
        for end in ("either-side-empty", "mover-empty"):
            for remaining in ("owner", "empty-side"):
                rules = Rules(houses=3, seeds=2, capture=capture, end=end, remaining=remaining)
                path = folder / f"{capture}-{end}-{remaining}.egdb"
                egdb.build(path, rules, 6, progress=False)
                found[rules] = EndgameDatabase.open(path, rules)
    return found


HEURISTIC_MOVES = Engine(tt_mb=8)


DEPTH_LIMITED = Engine(tt_mb=8)


DEEPENING = Engine(tt_mb=8)
DEEPENING.deepen_after = 40  # nearly every proof pauses for a deep estimate
DEEPENING.deep_move_depth = 2  # small positions' estimates are shallow


def count_deep_estimates(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The nodes of the paused proof, one entry per deep estimate ``engine`` takes."""
    calls: list[int] = []
    deep_estimate = engine._deep_estimate

    def counted(position: Position, rules: Rules, spent: int) -> int | None:
        calls.append(spent)
        return deep_estimate(position, rules, spent)

    monkeypatch.setattr(engine, "_deep_estimate", counted)
    return calls


def test_a_long_proof_takes_the_deep_estimate_and_a_short_one_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rules = Rules(houses=4, seeds=3)
    position = Position.start(rules)
    engine = Engine(tt_mb=8)
    calls = count_deep_estimates(engine, monkeypatch)
    short = engine.analyse(position, rules, prove="value")
    assert short.exact and calls == []
    engine.clear()
    engine.deepen_after = 2048  # its MTD(f) takes about 14,000 nodes
    paused = engine.analyse(position, rules, prove="value")
    assert paused.exact and paused.value == short.value
    assert calls and calls[0] >= engine.deepen_after


class CountingClears:
    """A searcher that counts the table's clears (the compiled class takes no new attributes)."""

    def __init__(self, searcher: object) -> None:
        object.__setattr__(self, "_searcher", searcher)
        object.__setattr__(self, "cleared", [])

    def __getattr__(self, name: str) -> object:
        return getattr(self._searcher, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._searcher, name, value)

    def clear(self) -> None:
        self.cleared.append(self._searcher.nodes)
        self._searcher.clear()


def test_no_pause_empties_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deep estimate of a pause searches on a side table: the proof's table survives."""
    rules = Rules(houses=4, seeds=3)
    position = Position.start(rules)
    engine = Engine(tt_mb=8)
    engine.deepen_after = 512  # every root move's proof pauses
    searcher = CountingClears(engine.searcher)
    monkeypatch.setattr(engine, "searcher", searcher)
    pauses = count_deep_estimates(engine, monkeypatch)
    unpaused = Engine(tt_mb=8).analyse(position, rules, prove="all")
    for _ in range(2):
        engine.clear()
        pauses.clear()
        searcher.cleared.clear()
        analysis = engine.analyse(position, rules, prove="all")
        assert analysis.exact and analysis.moves == unpaused.moves
        assert len(pauses) >= 2 and searcher.cleared == []


def test_a_side_table_leaves_the_main_table_and_hands_its_entries_over() -> None:
    """``Searcher.side_table`` searches on an empty table of its own; ``main_table`` returns to
    the main table as it was and, with ``import_depth``, stores the side table's entries at
    least that deep into it (each entry's hash recovered from its key)."""
    rules, other_rules = Rules(houses=4, seeds=3), Rules(houses=5, seeds=3)
    start, other = Position.start(rules), Position.start(other_rules)
    s = Searcher(8)
    s.begin(start, rules)
    low, high, _, _ = s.mtdf(start, rules, 0, -24, 24, fresh=False)
    proven = s.table_bounds(start)
    assert low == high and proven == (low, high)
    for import_depth in (0, 6):
        s.side_table(1)
        assert s.table_bounds(start) is None  # an empty table of its own
        s.heuristic(other, other_rules, 6)  # entries of other rules: never in the main table
        estimated = s.table_move(other)
        assert estimated is not None
        assert (s.main_table(import_depth) > 0) == (import_depth > 0)
        assert s.table_move(other) == (estimated if import_depth else None)
        s.begin(start, rules)
        assert s.table_bounds(start) == proven
    assert s.main_table() == 0  # already on the main table


def test_a_paused_mtdf_keeps_its_budget_and_its_proven_bounds() -> None:
    """``Searcher.mtdf(pause_after=N)`` stops after about N nodes with proven bounds and
    ``aborted`` False; a budget that runs out during a pause still reports ``aborted``."""
    rules = Rules(houses=4, seeds=3)
    position = Position.start(rules)
    value = Engine(tt_mb=8).analyse(position, rules, prove="value").value
    s = Engine(tt_mb=8).searcher
    s.begin(position, rules)
    low, high, nodes, aborted = s.mtdf(position, rules, -24, -24, 24, fresh=False, pause_after=300)
    assert not aborted and not s.aborted and low < high
    assert low <= value <= high and 300 <= nodes < 300 + 2048
    low, high, _, aborted = s.mtdf(position, rules, value, low, high, fresh=False)
    assert (low, high, aborted) == (value, value, False)
    s.clear()
    s.begin(position, rules, nodes=200)
    low, high, nodes, aborted = s.mtdf(position, rules, -24, -24, 24, fresh=False, pause_after=300)
    assert aborted and s.aborted and low <= value <= high


# ------------------------------------------------ the big board (9..12 houses, > 255 seeds)


@st.composite
def big_small_positions(draw: st.DrawFn) -> tuple[Position, Rules]:
    """Positions on the big board small enough for brute force: 9..12 houses with a few seeds
    in houses, or a few houses whose stores hold more than 255 seeds (any rule options)."""
    wide = draw(st.booleans())
    houses = draw(st.integers(9, 12)) if wide else draw(st.integers(1, 4))
    drawn = draw(strategies.rules(min_houses=houses, max_houses=houses, max_seeds=24))
    cells = [0] * (2 * houses)
    for _ in range(draw(st.integers(1, 5 if wide else 8))):
        cells[draw(st.integers(0, 2 * houses - 1))] += 1
    low = 0 if wide else 256
    # At most 600 seeds in all (position.MAX_SEEDS): 300 + 290 + the 8 in houses.
    stores = (draw(st.integers(low, 300)), draw(st.integers(0, 290)))
    if drawn.pie and draw(st.booleans()):
        stores = (stores[0] + stores[1], 0)
    swap = drawn.pie and stores[1] == 0 and draw(st.booleans())
    to_move = draw(st.sampled_from([Side.SOUTH, Side.NORTH]))
    position = Position(tuple(cells[:houses]), tuple(cells[houses:]), stores, to_move, swap)
    assert game.board_module(position) is _bigboard
    return position, drawn


@settings(max_examples=200, deadline=None)
@given(big_small_positions())
def test_big_board_values_and_optimal_moves_equal_brute_force(
    case: tuple[Position, Rules],
) -> None:
    position, rules = case
    analysis = ENGINE.analyse(position, rules)
    assert analysis.exact
    assert analysis.value == ref.value(position, rules)
    if not ref.is_over(position, rules):
        assert {m.move: m.value for m in analysis.moves} == ref.move_values(position, rules)


@settings(max_examples=100, deadline=None)
@given(big_small_positions(), st.integers(1, 6))
def test_big_board_depth_limited_search_is_bounded(
    case: tuple[Position, Rules], depth: int
) -> None:
    position, rules = case
    if ref.is_over(position, rules):
        return
    analysis = ENGINE.analyse(position, rules, depth=depth)
    assert analysis.lower <= ref.value(position, rules) <= analysis.upper


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_big_board_search_with_a_database_equals_brute_force(
    databases: dict[Rules, EndgameDatabase], data: st.DataObject
) -> None:
    """More than 255 seeds on 3 houses: the big board reads the one-word database (its lanes
    packed into bytes) as the small board does."""
    rules = data.draw(st.sampled_from(sorted(databases, key=repr)))
    cells = [0] * 6
    for _ in range(data.draw(st.integers(1, 11))):
        cells[data.draw(st.integers(0, 5))] += 1
    # At most 600 seeds in all (position.MAX_SEEDS): 300 + 285 + the 11 in houses.
    stores = (data.draw(st.integers(200, 300)), data.draw(st.integers(60, 285)))
    to_move = data.draw(st.sampled_from([Side.SOUTH, Side.NORTH]))
    position = Position(tuple(cells[:3]), tuple(cells[3:]), stores, to_move)
    assert game.board_module(position) is _bigboard
    engine = Engine(4, [databases[rules]])
    engine.searcher.unstored_above_db = data.draw(st.sampled_from([0, 4]))
    analysis = engine.analyse(position, rules)
    assert analysis.exact
    assert analysis.value == ref.value(position, rules)


@pytest.mark.parametrize("preset", ["kalah", "kalaha", "piet-hein", "kalah-pie"])
def test_big_and_small_boards_search_the_same_game_alike(preset: str) -> None:
    """Outside majority the stores do not change the future: the start of Kalah(4,3) with 300
    seeds added to the stores (the big board) has the small board's value, shifted by them."""
    rules = Rules.preset(preset, houses=4, seeds=3)
    start = Position.start(rules)
    shifted = Position(start.south, start.north, (170, 130), start.to_move, start.swap_available)
    if rules.pie:
        shifted = Position(start.south, start.north, (300, 0), start.to_move, True)
    assert game.board_module(shifted) is _bigboard
    small = Engine(8).analyse(start, rules)
    big = Engine(8).analyse(shifted, rules)
    offset = shifted.stores[0] - shifted.stores[1]
    assert big.exact and small.exact
    if not rules.pie:
        assert big.value == small.value + offset
        assert [(m.move, m.value) for m in big.moves] == [
            (m.move, m.value + offset) for m in small.moves
        ]
    else:  # a swap to come exchanges the stores: the big board's own value, proven
        assert big.lower == big.upper == big.value


def test_twelve_houses_analysis_under_a_budget_keeps_proven_bounds() -> None:
    rules = Rules.preset("kgp", houses=12, seeds=12)
    analysis = Engine(8).analyse(Position.start(rules), rules, time_ms=300)
    assert not analysis.exact and analysis.depth is not None and analysis.depth >= 1
    assert -rules.total_seeds <= analysis.lower <= analysis.value <= analysis.upper
    assert analysis.upper <= rules.total_seeds and len(analysis.moves) == 12


SAME_DRAFT = Engine(tt_mb=8)
FRESH = Engine(tt_mb=8)


@settings(max_examples=60, deadline=None)
@given(st.integers(10, 12), st.integers(8, 12), st.integers(0, 20), st.integers(1, 2), st.data())
def test_same_draft_weighs_every_move_at_the_depth_asked(
    houses: int, seeds: int, opening: int, depth: int, data: st.DataObject
) -> None:
    """``Searcher.same_draft`` (the KGP agent's setting): a table left by deeper searches of the
    position and of one of its children changes no move's depth-limited value; the values are
    a fresh table's. Big KGP starts and at most four sowings from the start, so that no line
    ends (a proven entry is used at any depth): a side empties one house a sowing at most, and
    no store passes half the seeds in four sowings."""
    rules = Rules.preset("kgp", houses=houses, seeds=seeds)
    position = game.Game(rules).position
    if opening:  # one sowing first (at most: the searches below add three)
        moves = game.legal_moves(position, rules)
        position = game.play(position, rules, moves[opening % len(moves)]).after
    SAME_DRAFT.searcher.same_draft = True
    SAME_DRAFT.clear()
    child = data.draw(st.sampled_from(game.legal_moves(position, rules)))
    SAME_DRAFT.analyse(game.play(position, rules, child).after, rules, depth=2)
    SAME_DRAFT.analyse(position, rules, depth=3)
    warm = SAME_DRAFT.analyse(position, rules, depth=depth)
    FRESH.clear()
    fresh = FRESH.analyse(position, rules, depth=depth)
    assert {m.move: m.value for m in warm.moves} == {m.move: m.value for m in fresh.moves}


@pytest.mark.parametrize(("seeds", "depth"), [(4, 4), (6, 5)])
def test_an_estimate_lists_every_tied_move_as_an_exact_answer_does(seeds: int, depth: int) -> None:
    """Issue 50: an estimate named one best move where several tied (Kalah(6,6) at 5 sowings:
    five moves at 0). Estimates are whole seeds: every move whose estimate equals the best
    one's is a best move, in the order of ``moves``."""
    rules = Rules.preset("kalah", seeds=seeds)
    analysis = Engine(tt_mb=16).analyse(Position.start(rules), rules, depth=depth)
    assert not analysis.exact
    tied = [m.move for m in analysis.moves if m.value == analysis.moves[0].value]
    assert len(tied) > 1
    assert analysis.best_moves == tied


def test_one_infinity_beyond_every_value() -> None:
    """The Python side's open bound is the compiled search's own sentinel (the default of its
    window) and lies beyond every value a position can have."""
    window = inspect.signature(Searcher.heuristic).parameters
    assert (window["alpha"].default, window["beta"].default) == (-INFINITY, INFINITY)
    assert MAX_SEEDS < INFINITY


def test_expanded_counts_the_nodes_not_settled_on_entry() -> None:
    """``Searcher.expanded``: of the nodes searched, those whose children were generated (the
    published solver's count). A proof cuts some nodes on entry by their table entry or by
    futility, so fewer than all; a second proof on the warm table is settled at the root."""
    rules = Rules(houses=4, seeds=3)
    start = Position.start(rules)
    s = Searcher(8)
    s.threads = 1
    s.begin(start, rules)
    low, high, nodes, _ = s.mtdf(start, rules, 0, -24, 24, fresh=False)
    assert low == high
    assert 0 < s.expanded < s.nodes == nodes
    s.begin(start, rules)
    s.mtdf(start, rules, low, -24, 24, fresh=False)
    assert s.expanded == 0 < s.nodes
