"""A fixed list of analyses whose total node count fingerprints the search.

A change that should not change the search (a refactor, a speed-up of the same tree) must
leave the node count unchanged; a change that alters the tree shows in it. Time is reported
too, but compare times only as ratios within one run on one machine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .position import parse_position
from .rules import Rules
from .solver import Engine

BENCH_TT_MB = 64

# (rules, position): start positions of small games under every preset, then mid-game
# Kalah(6,4) positions (26..34 seeds in houses) from fixed-seed random playouts.
BENCH_POSITIONS: list[tuple[Rules, str]] = [
    (Rules(houses=6, seeds=3), "start"),
    (Rules(houses=4, seeds=4, capture="always"), "start"),
    (Rules.preset("kalaha", houses=5), "start"),
    (Rules.preset("kalah-ru", houses=4, seeds=3), "start"),
    (Rules.preset("piet-hein", houses=4, seeds=3), "start"),
    (Rules.preset("kalah-pie", houses=4, seeds=3), "start"),
    (Rules(), "371022-4-042913-10-s"),
    (Rules(), "061242-15-211028-4-n"),
    (Rules(), "098000-5-911114-9-n"),
    (Rules(), "181023-10-331a02-4-s"),
    (Rules(), "532a04-12-411000-6-s"),
    (Rules(), "190813-11-380100-3-s"),
]


@dataclass(frozen=True, slots=True)
class BenchRow:
    rules: Rules
    position: str
    value: int
    exact: bool
    nodes: int
    time_ms: float


def run_bench(tt_mb: int = BENCH_TT_MB) -> list[BenchRow]:
    """Analyse every bench position exactly from an empty table."""
    engine = Engine(tt_mb)
    rows = []
    for rules, text in BENCH_POSITIONS:
        position = parse_position(text, rules)
        engine.clear()
        started = time.perf_counter()
        a = engine.analyse(position, rules)
        elapsed = (time.perf_counter() - started) * 1000.0
        rows.append(BenchRow(rules, position.compact(), a.value, a.exact, a.nodes, elapsed))
    return rows
