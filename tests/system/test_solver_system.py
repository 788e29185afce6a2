"""The system tests of tests/engine/test_solver.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import test_solver
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import small_positions
from test_solver import (
    DEEPENING,
    DEPTH_LIMITED,
    ENGINE,
    HEURISTIC_MOVES,
)

from kalah_core import Position, Rules, Side
from kalah_core import reference as ref
from kalah_core.egdb import EndgameDatabase
from kalah_core.solver import Engine, Prove

databases = test_solver.databases  # the fixture these tests share with test_solver.py


@settings(max_examples=2500)
@given(small_positions())
def test_exact_values_and_optimal_moves_equal_brute_force(case: tuple[Position, Rules]) -> None:
    position, rules = case
    analysis = ENGINE.analyse(position, rules)
    assert analysis.exact
    assert analysis.value == ref.value(position, rules)
    assert analysis.lower == analysis.upper == analysis.value
    if ref.is_over(position, rules):
        assert analysis.moves == [] and analysis.best_moves == []
        return
    expected = ref.move_values(position, rules)
    assert {m.move: m.value for m in analysis.moves} == expected
    assert all(m.exact for m in analysis.moves)
    assert set(analysis.best_moves) == {m for m, v in expected.items() if v == analysis.value}
    values = [m.value for m in analysis.moves]
    assert values == sorted(values, reverse=True)


@settings(max_examples=300)
@given(small_positions(), st.integers(0, 6))
def test_depth_limited_mode_is_labelled_and_bounded(
    case: tuple[Position, Rules], depth: int
) -> None:
    position, rules = case
    if ref.is_over(position, rules):
        return
    analysis = ENGINE.analyse(position, rules, depth=depth + 1)
    truth = ref.value(position, rules)
    assert analysis.lower <= truth <= analysis.upper
    if analysis.exact:
        assert analysis.value == truth
    else:
        assert analysis.depth == depth + 1


@settings(max_examples=300)
@given(small_positions(), st.integers(1, 400))
def test_node_budget_keeps_bounds_proven(case: tuple[Position, Rules], nodes: int) -> None:
    position, rules = case
    analysis = ENGINE.analyse(position, rules, nodes=nodes)
    truth = ref.value(position, rules)
    assert analysis.lower <= truth <= analysis.upper
    for move in analysis.moves:
        assert move.lower <= move.value <= move.upper
    if analysis.exact:
        assert analysis.value == truth


@settings(max_examples=800)
@given(small_positions())
def test_best_only_mode_proves_value_and_every_optimal_move(case: tuple[Position, Rules]) -> None:
    position, rules = case
    if ref.is_over(position, rules):
        return
    analysis = ENGINE.analyse(position, rules, prove="optimal")
    expected = ref.move_values(position, rules)
    value = max(expected.values())
    assert analysis.exact and analysis.value == value
    assert set(analysis.best_moves) == {m for m, v in expected.items() if v == value}
    for move in analysis.moves:
        assert move.lower <= expected[move.move] <= move.upper
        if not move.exact:
            assert move.upper < value


@settings(max_examples=300)
@given(st.data())
def test_search_with_a_database_equals_brute_force(
    databases: dict[Rules, EndgameDatabase], data: st.DataObject
) -> None:
    rules = data.draw(st.sampled_from(sorted(databases, key=repr)))
    rules = rules.replace(pie=data.draw(st.booleans()))
    cells = [0] * 6
    for _ in range(data.draw(st.integers(1, 11))):
        cells[data.draw(st.integers(0, 5))] += 1
    stores = (data.draw(st.integers(0, 5)), 0 if rules.pie else data.draw(st.integers(0, 5)))
    to_move = data.draw(st.sampled_from([Side.SOUTH, Side.NORTH]))
    swap = rules.pie and data.draw(st.booleans())
    position = Position(tuple(cells[:3]), tuple(cells[3:]), stores, to_move, swap)
    base = rules.replace(pie=False)
    engine = Engine(4, [databases[base]])
    # With the default, the boards 1-4 seeds above the database are searched without the table.
    engine.searcher.unstored_above_db = data.draw(st.sampled_from([0, 2, 4]))
    analysis = engine.analyse(position, rules)
    assert analysis.exact
    assert analysis.value == ref.value(position, rules)
    if not ref.is_over(position, rules):
        assert {m.move: m.value for m in analysis.moves} == ref.move_values(position, rules)


@settings(max_examples=500)
@given(small_positions(), st.sampled_from([1, 2, 4]))
def test_heuristic_entries_moves_order_the_proof_not_its_values(
    case: tuple[Position, Rules], move_depth: int
) -> None:
    """``Searcher.heuristic_move_depth``: the exact search tries first the move of a
    depth-limited entry that deep (the analysis's deepening leaves them in the table); the
    proven values stay the same."""
    position, rules = case
    HEURISTIC_MOVES.searcher.heuristic_move_depth = move_depth
    analysis = HEURISTIC_MOVES.analyse(position, rules)
    assert analysis.exact and analysis.value == ref.value(position, rules)
    if not ref.is_over(position, rules):
        assert {m.move: m.value for m in analysis.moves} == ref.move_values(position, rules)


@settings(max_examples=500)
@given(small_positions(), st.integers(1, 12), st.integers(-8, 8))
def test_a_depth_limited_search_proves_the_subtrees_it_searched_to_the_end(
    case: tuple[Position, Rules], depth: int, beta: int
) -> None:
    """A subtree whose every line ends (or reaches the database) within the depth is stored
    with proven bounds, which the exact search then trusts: every proven bound left in the
    table by a null-window depth-limited search holds, at the root and at its children."""
    position, rules = case
    if ref.is_over(position, rules):
        return
    s = DEPTH_LIMITED.searcher
    DEPTH_LIMITED.clear()
    s.heuristic(position, rules, depth, beta - 1, beta)
    checked = [(position, ref.value(position, rules))]
    for move, value in ref.move_values(position, rules).items():
        child = ref.play(position, rules, move)[0]
        same_mover = child.to_move is position.to_move and move != "swap"
        if not ref.is_over(child, rules):
            checked.append((child, value if same_mover else -value))
    for board, truth in checked:
        bounds = s.table_bounds(board)
        if bounds is not None:
            assert bounds[0] <= truth <= bounds[1], (board.compact(), depth, beta)


def test_a_depth_limited_search_past_the_end_of_the_game_proves_the_value() -> None:
    rules = Rules(houses=4, seeds=2)
    position = Position.start(rules)
    value = ref.value(position, rules)
    DEPTH_LIMITED.clear()
    v, _, _, _ = DEPTH_LIMITED.searcher.heuristic(position, rules, 80)
    assert v == value
    assert DEPTH_LIMITED.searcher.table_bounds(position) == (value, value)
    DEPTH_LIMITED.clear()
    DEPTH_LIMITED.searcher.heuristic(position, rules, 2)
    assert DEPTH_LIMITED.searcher.table_bounds(position) is None  # an estimate, not a proof


@settings(max_examples=500)
@given(small_positions(), st.sampled_from(["all", "value"]))
def test_a_proof_paused_for_a_deep_estimate_proves_the_same_values(
    case: tuple[Position, Rules], prove: Prove
) -> None:
    """A long MTD(f) pauses, deepens an estimate on a side table and resumes from it with
    heuristic moves first (``Engine.deepen_after``): the proven values stay the same."""
    position, rules = case
    DEEPENING.clear()
    analysis = DEEPENING.analyse(position, rules, prove=prove)
    assert analysis.exact and analysis.value == ref.value(position, rules)
    assert DEEPENING.searcher.heuristic_move_depth == 255  # the analysis's own setting
    if prove == "all" and not ref.is_over(position, rules):
        assert {m.move: m.value for m in analysis.moves} == ref.move_values(position, rules)


@settings(max_examples=500)
@given(small_positions())
def test_value_mode_proves_the_value_and_one_optimal_move(case: tuple[Position, Rules]) -> None:
    position, rules = case
    if ref.is_over(position, rules):
        return
    analysis = ENGINE.analyse(position, rules, prove="value")
    expected = ref.move_values(position, rules)
    value = max(expected.values())
    assert analysis.exact and analysis.value == value
    assert analysis.best_moves and all(expected[m] == value for m in analysis.best_moves)
    for move in analysis.moves:
        assert move.lower <= expected[move.move] <= move.upper
