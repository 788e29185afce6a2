"""The whole declared domain as one hypothesis strategy (issue 47): every rule set the API
accepts and every valid position under it, with the places where code tends to break drawn
on purpose. Any test may import it (``from domain import cases``) to drive its entry point.

What :func:`cases` draws:

- rules: any preset, each option overridden or not: 1-12 houses, 1-24 start seeds, both
  captures, both ends, both remainings, majority, pie;
- positions of those houses, 0-600 seeds anywhere: spread at random over houses and stores,
  one pit (house or store, either side) at a limit (0, 255, 256, 257, ..., 600) with the rest
  spread, one row empty (games over under ``either-side-empty``), a store past half the seeds
  (over under ``majority``), and small boards the reference can solve;
- either side to move, the pie swap pending wherever it is valid.

:func:`kalah_core.reference.value` (the oracle's plain minimax) solves the boards
:attr:`Case.solvable` says are small.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

from hypothesis import strategies as st

from kalah_core import Position, Rules
from kalah_core.position import MAX_SEEDS, Side
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS, PRESETS

OPTIONS: dict[str, Callable[[Random], Any]] = {
    "houses": lambda rng: rng.randint(1, MAX_HOUSES),
    "seeds": lambda rng: rng.randint(1, MAX_START_SEEDS),
    "capture": lambda rng: rng.choice(["nonempty", "always"]),
    "end": lambda rng: rng.choice(["either-side-empty", "mover-empty"]),
    "remaining": lambda rng: rng.choice(["owner", "empty-side"]),
    "majority": lambda rng: rng.random() < 0.5,
    "pie": lambda rng: rng.random() < 0.5,
}
"""Every rule option and the values the API accepts for it (docs/rules.md)."""

LIMITS = (0, 1, 254, 255, 256, 257, 300, 511, 512, 599, MAX_SEEDS)
"""Counts a single pit is pinned to: around a byte's limit, a 9-bit limit and the maximum."""

SOLVABLE_SEEDS = 7
"""Boards of at most this many seeds in houses (and at most 6 houses) are solved by the
reference's minimax in well under a second (12 seeds on 4 houses took 8.6 s)."""


@dataclass(frozen=True)
class Case:
    """A preset with its overrides (as a caller names them), the rules they make, and a valid
    position under those rules."""

    preset: str
    overrides: dict[str, Any]
    rules: Rules
    position: Position

    @property
    def compact(self) -> str:
        return self.position.compact()

    @property
    def rules_json(self) -> dict[str, Any]:
        """The rules as a request body gives them."""
        return {"preset": self.preset, **self.overrides}

    def query(self) -> str:
        """``position=...&rules=...`` and one parameter per overridden option."""
        parts = [f"position={self.compact}", f"rules={self.preset}"]
        parts += [
            f"{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in self.overrides.items()
        ]
        return "&".join(parts)

    def cli_rules(self) -> list[str]:
        """The rules as the ``kalah`` command's options."""
        argv = ["--rules", self.preset]
        for name, value in self.overrides.items():
            if isinstance(value, bool):
                argv.append(f"--{name}" if value else f"--no-{name}")
            else:
                argv += [f"--{name}", str(value)]
        return argv

    @property
    def solvable(self) -> bool:
        return (
            self.rules.houses <= 6
            and sum(self.position.south + self.position.north) <= SOLVABLE_SEEDS
        )

    def __repr__(self) -> str:  # what hypothesis prints for a failing case: enough to repeat it
        return f"Case({self.preset!r}, {self.overrides!r}, {self.compact!r})"


# The drawing is done by one drawn ``Random`` per case: hypothesis drawing each option and
# count on its own cost 40-50 ms a case on a loaded machine, the search itself far less.


def rules_spec(rng: Random) -> tuple[str, dict[str, Any], Rules]:
    """A preset and some of its options overridden, and the rules they make."""
    preset = rng.choice(sorted(PRESETS))
    # each option overridden one time in four: the presets' own rule sets (the ones the books
    # serve) stay common, every combination still reachable
    overrides = {name: value(rng) for name, value in OPTIONS.items() if rng.random() < 0.25}
    return preset, overrides, Rules.preset(preset, **overrides)


def _spread(rng: Random, total: int, pits: int) -> list[int]:
    """``total`` seeds cut at random into ``pits`` counts."""
    cuts = sorted(rng.randint(0, total) for _ in range(pits - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


def _total(rng: Random, most: int) -> int:
    """Any total up to ``most``, one time in three one of the :data:`LIMITS`."""
    if rng.random() < 1 / 3:
        return rng.choice([t for t in LIMITS if t <= most])
    return rng.randint(0, most)


def position_for(rng: Random, rules: Rules) -> Position:
    """A valid position under ``rules``: see the module's docstring for the shapes."""
    h = rules.houses
    pits = 2 * h + 2  # South's houses, South's store, North's houses, North's store
    shape = rng.choice(["spread", "limit", "limit", "row-empty", "store-majority", "small"])
    if shape == "spread":
        counts = _spread(rng, _total(rng, MAX_SEEDS), pits)
    elif shape == "limit":
        pinned = rng.choice(LIMITS) if rng.random() < 0.5 else rng.randint(0, MAX_SEEDS)
        rest = _spread(rng, _total(rng, MAX_SEEDS - pinned), pits - 1)
        at = rng.randint(0, pits - 1)
        counts = [*rest[:at], pinned, *rest[at:]]
    elif shape == "row-empty":
        counts = _spread(rng, _total(rng, MAX_SEEDS), pits)
        row = rng.choice([0, h + 1])
        counts[row : row + h] = [0] * h
    elif shape == "store-majority":
        total = rng.randint(1, MAX_SEEDS)
        store = rng.randint(total // 2 + 1, total)
        counts = _spread(rng, total - store, pits - 1)
        at = rng.choice([h, 2 * h + 1])
        counts = [*counts[:at], store, *counts[at:]]
    else:
        # few seeds in houses (most of them boards the reference solves), any in the stores
        houses = _spread(rng, rng.randint(0, SOLVABLE_SEEDS + 3), 2 * h)
        counts = [*houses[:h], rng.randint(0, 20), *houses[h:], rng.randint(0, 20)]
    south, north = tuple(counts[:h]), tuple(counts[h + 1 : 2 * h + 1])
    stores = (counts[h], counts[2 * h + 1])
    swap = rules.pie and stores[1] == 0 and rng.random() < 0.5
    position = Position(south, north, stores, rng.choice(list(Side)), swap)
    assert position.is_valid(rules), (position, rules)
    return position


def positions_for(rules: Rules) -> st.SearchStrategy[Position]:
    """Any valid position under ``rules``."""
    return st.randoms(use_true_random=False).map(lambda rng: position_for(rng, rules))


def _case(rng: Random) -> Case:
    preset, overrides, rules = rules_spec(rng)
    return Case(preset, overrides, rules, position_for(rng, rules))


def cases() -> st.SearchStrategy[Case]:
    """Any rule set the API accepts and any valid position under it."""
    return st.randoms(use_true_random=False).map(_case)


def moves_for(case: Case) -> st.SearchStrategy[list[Any]]:
    """1-3 moves as a caller sends them: houses 1..houses or ``swap``, legal or not."""
    move = st.integers(1, case.rules.houses) | st.just("swap")
    return st.lists(move, min_size=1, max_size=3)
