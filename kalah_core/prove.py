"""Proving a position's value or a bound on it by null-window tests (``kalah prove``).

The proof is the AND/OR tree of :mod:`kalah_core.deepbook_refine` rooted at the position: its
moves are the leaves (one ply), or, where the deep book holds the position, the book's records
below it. The tests go to an executor in batches, with caps doubling round by round; a
checkpoint of their outcomes resumes a proof. Each worker keeps its table warm across the
proof's tests and deepens an estimate of a move's position once its tests grow long (the
one-process solve's cost; ``warm=False``, ``--cold``: each test on an emptied table, a pure
function of (position, threshold, cap)). Every verdict is a proven fact either way, so the
proven bounds and a finished proof's value are the one-process run's; warm, the batches (which
tests ran out of their caps) may differ from run to run (the deepbook_refine docstring). Unlike
a refinement, "value <= t" of a record tests each move apart (so they run in parallel), and the
thresholds follow MTD(f): the first at the position's estimate (a depth-limited search within
the first cap), each next one at the bound the last test moved, until the bounds meet (the
exact value) or the asked bound is decided."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TextIO

from .deepbook import DeepSection, deep_key, find_deep_key, key_position, lead
from .deepbook_build import DeepBudget, deep_record
from .deepbook_refine import HIGH, LOW, RefineBudget, Refiner, _decided, _Stop
from .errors import KalahError
from .game import legal_moves
from .position import Position
from .rules import Rules
from .tasks import Executor


@dataclass(frozen=True, slots=True)
class Proof:
    """What a proof found: the position's proven bounds (values for the player to move), the
    asked claim's verdict (``holds``: True, False, or None when it is still open), and its
    cost: tests and their nodes (replayed ones included), nodes searched for this run."""

    lower: int
    upper: int
    holds: bool | None
    tests: int
    nodes: int
    searched: int
    seconds: float
    book: bool

    @property
    def exact(self) -> bool:
        return self.lower == self.upper


class Prover(Refiner):
    """A proof at one position (see the module docstring)."""

    whole_records = False

    def prove(self, at_least: int | None = None, at_most: int | None = None) -> bool | None:
        """Prove "value >= at_least", "value <= at_most" (in future gains), or, with neither,
        the exact value; the claim's verdict (None: the time ran out)."""
        first = self.budget.first_nodes
        cap = first
        guess = self.records[self.root].estimate
        try:
            while True:
                record = self.records[self.root]
                lower, upper = record.lower, record.upper
                if at_least is not None or at_most is not None:
                    side, t = (LOW, at_least) if at_least is not None else (HIGH, at_most)
                    assert t is not None
                    decided = _decided(lower, upper, side, t)
                    if decided is not None:
                        return decided
                elif lower == upper:
                    return True
                else:
                    side, t = self._next_claim(lower, upper, guess)
                got = self.decide(side, t, cap)
                if got is None:
                    cap *= 2
                    continue
                cap = first
                if at_least is not None or at_most is not None:
                    return got
                record = self.records[self.root]
                if (record.lower, record.upper) == (lower, upper):
                    return None  # pragma: no cover - a decided claim always moves a bound
                guess = record.lower if record.lower > lower else record.upper
        except _Stop:
            return None
        finally:
            self.close()

    def _next_claim(self, lower: int, upper: int, guess: int) -> tuple[str, int]:
        """MTD(f)'s next test: "value >= g" at the guess g of the values' parity inside the
        bounds, or "value <= lower" when the guess is the lower bound."""
        parity = (self.rules.total_seeds - lead(key_position(self.root, self.rules))) % 2
        g = max(lower, min(upper, guess))
        if (g - parity) % 2:
            g = g + 1 if g + 1 <= upper else g - 1
        return (LOW, g) if g > lower else (HIGH, lower)


def prove_position(
    rules: Rules,
    position: Position,
    budget: RefineBudget,
    *,
    section: DeepSection | None = None,
    at_least: int | None = None,
    at_most: int | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    until: float | None = None,
    stream: TextIO | None = None,
    executor: Executor | None = None,
    warm: bool = True,
) -> Proof:
    """Prove ``position``'s value, or "value >= at_least" / "value <= at_most" (values for the
    player to move), with the records of the deep book ``section`` (if it has the rules')
    below it; the tests on ``executor`` (default: this process), each process's table kept
    warm from one test to the next (``warm``; else emptied for each: see the module
    docstring)."""
    if position.swap_available:
        raise KalahError("kalah prove: not where the pie rule's swap is open")
    if not legal_moves(position, rules):
        raise KalahError("kalah prove: the game is over")
    started = time.perf_counter()
    diff = lead(position)
    records = dict(section.records) if section is not None and section.rules == rules else {}
    key = find_deep_key(position, rules)
    in_book = key is not None and key in records
    if not in_book:
        key = deep_key(position, rules)
        estimate = DeepBudget(budget.first_nodes, 0, budget.tt_mb, budget.databases)
        records[key] = deep_record(rules, key, estimate)
    assert key is not None
    prover = Prover(
        DeepSection(rules, 0, records, {}),
        budget,
        checkpoint=checkpoint,
        until=until,
        stream=stream,
        executor=executor,
        root=key,
        warm=warm,
    )
    holds = prover.prove(
        None if at_least is None else at_least - diff, None if at_most is None else at_most - diff
    )
    prover.apply_known()
    record = prover.records[key]
    return Proof(
        record.lower + diff,
        record.upper + diff,
        holds,
        prover.tests,
        prover.spent,
        prover.searched,
        round(time.perf_counter() - started, 3),
        in_book,
    )
