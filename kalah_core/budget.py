"""How an analysis spends its budget: the exact search's share, the rounds of a long or
unbounded budget, the proven bounds' share, and which budgets the deep book answers."""

from __future__ import annotations

from collections.abc import Iterator

EXACT_SHARE = 0.75  # of a budget for the exact search
BOUNDS_SHARE = 0.15  # for proven bounds when the exact search did not prove the value; the rest
#                      improves the fallback estimate
PROBE_SHARE = 0.1  # of a budget beyond reach (_in_reach) for the exact search
ESTIMATE_UNTIL = 0.75  # then the estimate deepens until this share; the bounds get the rest
REACH_SEEDS = 30  # seeds in houses a 1 s budget may prove without a database; a 24-seed one
#                   adds 0.6 a seed: benchmarks/move_quality.py's labels (prove="all", 20 s) took
#                   1-2 s at 29-34 seeds without one (majority), 1.2-2.9 s at 44-46 with one
REACH_PER_DB_SEED = 0.6
REACH_PER_DOUBLING = 2  # more seeds per doubling of the budget
NODES_PER_MS = 2_000  # a node budget's time, for _in_reach (about one core's speed)
DEEP_BOOK_MS = 10_000.0  # the longest budget the deep book answers for (the API's longest)
ROUND_MS = 10_000.0  # budgets longer than this (the API's longest) alternate exact and bounds
ENDLESS_FIRST_MS = 2_000.0  # the first round of an unbounded solve; the rounds then double
ENDLESS_BOUNDS_SHARE = 0.2  # of each round of an unbounded solve, for proven bounds


Round = tuple[tuple[float, int], tuple[float, int]]
"""Where a round of an analysis ends: (exact search until, bounds until), each as (milliseconds,
nodes) from the start."""


def _schedule(time_ms: float, nodes: int) -> list[Round]:
    """Where each round of an unbounded or budgeted exact analysis ends: (exact search until,
    bounds until), as (milliseconds, nodes) from the start; the fallback estimate has the rest.

    A budget up to ``ROUND_MS`` is one round: EXACT_SHARE for the proof, BOUNDS_SHARE for
    bounds. A longer one cannot know whether the proof fits (Kalah(6,5) is minutes, Kalah(6,6)
    weeks), so after a first round of ``ROUND_MS`` the rounds double and split evenly: a proof
    that fits in half the budget is still found (the table stays warm across rounds), and one
    that does not fit leaves half the budget to bounds instead of BOUNDS_SHARE."""
    if not time_ms and not nodes:
        return [((0.0, 0), (0.0, 0))]  # unbounded: one proof
    # Rounds are cut in time when there is a time budget (else in nodes), the other in step.
    total = time_ms if time_ms else float(nodes)
    first = min(total, ROUND_MS) if time_ms else total
    usable = total * (EXACT_SHARE + BOUNDS_SHARE)
    marks = [(first * EXACT_SHARE, first * (EXACT_SHARE + BOUNDS_SHARE))]
    size = first
    while marks[-1][1] < usable:
        size *= 2
        start = marks[-1][1]
        end = start + size
        if usable - end < size:  # too little left for another round: this one takes it
            end = usable
        marks.append(((start + end) / 2, end))

    def point(x: float) -> tuple[float, int]:
        fraction = x / total
        return (time_ms * fraction, int(nodes * fraction))

    return [(point(e), point(b)) for e, b in marks]


def _endless() -> Iterator[Round]:
    """The rounds of an unbounded solve, in time: ENDLESS_FIRST_MS, then doubling, each giving
    ENDLESS_BOUNDS_SHARE of it to proven bounds. The proof resumes on the warm table each round,
    so a proof costs little more than one search; a terminal (``kalah solve --progress``) sees
    the bounds narrow within seconds, instead of the trivial ones until MTD(f)'s first test
    ends (hours at a 6-seed start)."""
    start, size = 0.0, ENDLESS_FIRST_MS
    while True:
        end = start + size
        yield (start + size * (1 - ENDLESS_BOUNDS_SHARE), 0), (end, 0)
        start, size = end, size * 2


def _short(time_ms: float | None, nodes: int | None) -> bool:
    """Whether a budget is one the deep book answers for: finite and at most DEEP_BOOK_MS (a
    longer one is meant to prove, and searches)."""
    if not time_ms and not nodes:
        return False
    return (time_ms or 0.0) <= DEEP_BOOK_MS and (nodes or 0) <= DEEP_BOOK_MS * NODES_PER_MS
