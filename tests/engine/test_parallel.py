"""One proof on several threads sharing the table: the same proven values as one thread.

Positions come from fixed-seed random playouts under rules that take every path of the search
(both capture rules, the pie rule, ``majority``), mid-game, with enough seeds left that the
threads defer one another's subtrees (simplified ABDADA) and part ways (Lazy SMP), and that a
thread's early search of younger children is cancelled when the other thread's elder child cuts
(the table then decides the node: ``Searcher.cancelled`` counts those)."""

from __future__ import annotations

import random

import pytest

from kalah_core import Position, Rules
from kalah_core.game import legal_moves, outcome, play
from kalah_core.position import parse_position
from kalah_core.solver import Engine

RULES = [
    Rules(houses=4, seeds=4),
    Rules(houses=4, seeds=4, capture="always"),
    Rules.preset("kalah-pie", houses=4, seeds=3),
    Rules.preset("kalah-ru", houses=4, seeds=3),
    Rules.preset("kalaha", houses=4, seeds=4),
]


def playout_positions(rules: Rules, count: int, seed: int) -> list[Position]:
    """``count`` positions a few random sowings into the game, none over."""
    rng = random.Random(seed)
    found: list[Position] = []
    while len(found) < count:
        position = parse_position("start", rules)
        for _ in range(rng.randrange(2, 9)):
            if outcome(position, rules) is not None:
                break
            position = play(position, rules, rng.choice(legal_moves(position, rules))).after
        if outcome(position, rules) is None:
            found.append(position)
    return found


CASES = [(rules, p) for i, rules in enumerate(RULES) for p in playout_positions(rules, 6, i)]
SERIAL = Engine(tt_mb=16)
PARALLEL = Engine(tt_mb=16, threads=2)


def move_values(engine: Engine, position: Position, rules: Rules) -> dict[object, int]:
    if engine is SERIAL and (rules, position) in _serial:
        return _serial[rules, position]
    engine.clear()
    analysis = engine.analyse(position, rules)
    assert analysis.exact and all(m.exact for m in analysis.moves)
    values: dict[object, int] = {m.move: m.value for m in analysis.moves}
    if engine is SERIAL:
        _serial[rules, position] = values
    return values


_serial: dict[tuple[Rules, Position], dict[object, int]] = {}


def test_thread_count_is_checked() -> None:
    for bad in (0, 65):
        with pytest.raises(ValueError, match="threads"):
            Engine(tt_mb=1, threads=bad)
    engine = Engine(tt_mb=1, threads=3)
    assert engine.threads == 3
    engine.threads = 1
    assert engine.searcher.threads == 1


def test_parallel_depth_limited_search_is_exact_past_the_game_and_keeps_its_budget() -> None:
    """Every thread runs the depth-limited search too: deeper than these games last, its value
    is the proven one; on a node budget it stops, helpers' nodes counted."""
    searcher = PARALLEL.searcher
    budget = 2000
    for rules, position in CASES[::2]:
        best = max(move_values(SERIAL, position, rules).values())
        PARALLEL.clear()
        v, nodes, aborted, _ = searcher.heuristic(position, rules, 80)
        assert (v, aborted) == (best, False), (rules, position.compact())
        if nodes > 4 * budget:
            PARALLEL.clear()
            _, nodes, aborted, _ = searcher.heuristic(position, rules, 80, nodes=budget)
            assert aborted and nodes < budget + 4 * 1024  # within a check interval per thread
    with pytest.raises(ValueError, match="depth"):
        searcher.heuristic(CASES[0][1], CASES[0][0], 255)
