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

:func:`reference_value` is the exact value by plain minimax over
:mod:`kalah_core.reference` (the oracle), for the boards :attr:`Case.solvable` says are small.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from kalah_core import Position, Rules
from kalah_core import reference as ref
from kalah_core.position import MAX_SEEDS, Side
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS, PRESETS

OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "houses": st.integers(1, MAX_HOUSES),
    "seeds": st.integers(1, MAX_START_SEEDS),
    "capture": st.sampled_from(["nonempty", "always"]),
    "end": st.sampled_from(["either-side-empty", "mover-empty"]),
    "remaining": st.sampled_from(["owner", "empty-side"]),
    "majority": st.booleans(),
    "pie": st.booleans(),
}
"""Every rule option and the values the API accepts for it (docs/rules.md)."""

LIMITS = (0, 1, 254, 255, 256, 257, 300, 511, 512, 599, MAX_SEEDS)
"""Counts a single pit is pinned to: around a byte's limit, a 9-bit limit and the maximum."""

SOLVABLE_SEEDS = 12
"""Boards of at most this many seeds in houses (and at most 6 houses) are solved by the
reference's minimax in milliseconds."""


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


@st.composite
def rules_specs(draw: st.DrawFn) -> tuple[str, dict[str, Any], Rules]:
    """A preset and some of its options overridden, and the rules they make."""
    preset = draw(st.sampled_from(sorted(PRESETS)))
    # each option overridden one time in four: the presets' own rule sets (the ones the books
    # serve) stay common, every combination still reachable
    sometimes = st.integers(0, 3).map(lambda n: n == 0)
    overrides = {name: draw(values) for name, values in OPTIONS.items() if draw(sometimes)}
    return preset, overrides, Rules.preset(preset, **overrides)


def _spread(draw: st.DrawFn, total: int, pits: int) -> list[int]:
    """``total`` seeds cut at random into ``pits`` counts (cut by a drawn ``Random``: drawing
    up to 25 cuts one by one made a case cost 20 ms to generate)."""
    rng = draw(st.randoms(use_true_random=False))
    cuts = sorted(rng.randint(0, total) for _ in range(pits - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


def _total(draw: st.DrawFn, most: int) -> int:
    return draw(st.integers(0, most) | st.sampled_from([t for t in LIMITS if t <= most]))


@st.composite
def positions_for(draw: st.DrawFn, rules: Rules) -> Position:
    """A valid position under ``rules``: see the module's docstring for the shapes."""
    h = rules.houses
    pits = 2 * h + 2  # South's houses, South's store, North's houses, North's store
    shape = draw(
        st.sampled_from(["spread", "limit", "limit", "row-empty", "store-majority", "small"])
    )
    if shape == "spread":
        counts = _spread(draw, _total(draw, MAX_SEEDS), pits)
    elif shape == "limit":
        pinned = draw(st.sampled_from(LIMITS) | st.integers(0, MAX_SEEDS))
        rest = _spread(draw, _total(draw, MAX_SEEDS - pinned), pits - 1)
        at = draw(st.integers(0, pits - 1))
        counts = [*rest[:at], pinned, *rest[at:]]
    elif shape == "row-empty":
        counts = _spread(draw, _total(draw, MAX_SEEDS), pits)
        row = draw(st.sampled_from([0, h + 1]))
        counts[row : row + h] = [0] * h
    elif shape == "store-majority":
        total = draw(st.integers(1, MAX_SEEDS))
        store = draw(st.integers(total // 2 + 1, total))
        counts = _spread(draw, total - store, pits - 1)
        at = draw(st.sampled_from([h, 2 * h + 1]))
        counts = [*counts[:at], store, *counts[at:]]
    else:
        houses = draw(st.lists(st.integers(0, 3), min_size=2 * h, max_size=2 * h))
        stores = draw(st.tuples(st.integers(0, 20), st.integers(0, 20)))
        counts = [*houses[:h], stores[0], *houses[h:], stores[1]]
    south, north = tuple(counts[:h]), tuple(counts[h + 1 : 2 * h + 1])
    stores = (counts[h], counts[2 * h + 1])
    swap = rules.pie and stores[1] == 0 and draw(st.booleans())
    position = Position(south, north, stores, draw(st.sampled_from(Side)), swap)
    assert position.is_valid(rules), (position, rules)
    return position


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Any rule set the API accepts and any valid position under it."""
    preset, overrides, rules = draw(rules_specs())
    return Case(preset, overrides, rules, draw(positions_for(rules)))


def moves_for(case: Case) -> st.SearchStrategy[list[Any]]:
    """1-3 moves as a caller sends them: houses 1..houses or ``swap``, legal or not."""
    move = st.integers(1, case.rules.houses) | st.just("swap")
    return st.lists(move, min_size=1, max_size=3)


@lru_cache(maxsize=500_000)
def reference_value(position: Position, rules: Rules) -> int:
    """The exact value of ``position`` for the player to move, by plain minimax over the
    reference rules (the swap hands the seat over: worth minus the value it leaves)."""
    if ref.is_over(position, rules):
        south, north = ref.final_score(position, rules)
        return south - north if position.to_move is Side.SOUTH else north - south
    best = None
    for move in ref.legal_moves(position, rules):
        after, _extra, _captured, over = ref.play(position, rules, move)
        if over:
            south, north = after.stores
            value = south - north if position.to_move is Side.SOUTH else north - south
        else:
            value = reference_value(after, rules)
            if move == "swap" or after.to_move is not position.to_move:
                value = -value
        best = value if best is None else max(best, value)
    assert best is not None
    return best
