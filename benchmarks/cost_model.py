"""What the proofs of the 6-seed starts would cost: a cost model from measured tests.

    python benchmarks/cost_model.py [--data benchmarks/data/proof_costs.json] [--json]

Every input is a measurement named in ``benchmarks/data/proof_costs.json`` with where it was
taken; nothing here is tuned. The model:

- **A bound's cost grows geometrically as it nears the value.** The ladder of single
  null-window tests at Kalah(6,6) empty capture's start (piet-hein, value +2) gives, per side,
  nodes against the distance ``d`` of the proven bound from the value. Each side's growth per
  4 seeds is fitted (least squares on log nodes) twice: over the whole ladder ("far") and over
  its three tests nearest the value ("near", the rate to extrapolate with: growth slows from
  7x to under 3x per 4 seeds as the bounds near the value, and the model carries on at the
  near rate).
- **Narrowing to a width W** needs a lower bound ``v - dl`` and an upper ``v + du`` with
  ``dl + du = W``: the cheapest split of the two extrapolated costs. ``v`` is the published
  value for piet-hein and the deep book's estimate elsewhere (labelled).
- **The exact value** is the test at ``d = 0`` on both sides. Two projections that bracket it:
  the near rates carried to ``d = 0`` (optimistic: growth steepens at the value, where the
  test is the whole proof) and Rawlings' published node count of the same proof (55 trillion,
  with 34-seed databases to the ladder's 24 and nodes counted his way).
- **Standard capture** (kalah-ru's and the KGP boards' rule) costs the empty-capture proof
  times the ratio measured on Kalah(6,5), the largest board both were proven on here.
- **Cores**: node rate per core from the ladder (its nodes over its thread-seconds); on ``P``
  cores the tests that can run at once are bounded by the deep book's frontier (the positions
  within its sowings), each on a whole core; or (the figures in brackets) as one position's
  proof scales, measured in nodes up to 4 workers (its MTD(f) chain caps it near 2.5x).
- **Three bases**, each a level per side (nodes against the ladder's at the same distance; the
  ladder gives the growth) and a node rate, each for the starts whose databases it was
  measured with:
  - *warm, 30-seed database*: the pass of ``kalah book refine --warm --threads 2`` that took
    piet-hein from [-12, +34] to [+0, +28], each side's level from the nodes of its claims
    (the lower side came out 126x below the ladder, the upper 2.6x; its nodes are 2.4x slower
    than the ladder's). Only for rules with as large a database: not kalah-ru, not the KGP boards.
  - *warm, 22-seed majority database*: the passes of the same command on kalah-ru with the
    largest ``majority`` database 24 GB holds, each side's level from the nodes its tests
    searched to prove its claim (a side whose claim is still open: what it searched so far, a
    floor), over the ladder's at the same distance from kalah-ru's estimate times the
    standard-capture ratio (below). For kalah-ru and KGP 6x6.
  - *cold, 24-seed database*: the ladder itself, times a cold refinement's overhead (its
    failed tries on emptied tables and the alternatives of OR nodes) on both sides.

What the model cannot see: whether the growth steepens before ``d = 0`` (the exact
projections differ by that), whether one pass's levels hold further in, and where kalah-ru's
and KGP's values lie (their bounds are placed around the deep book's estimate). Today's bounds
are the shipped deep book's.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kalah_core.deepbook import shipped
from kalah_core.position import Position
from kalah_core.rules import Rules

DATA = Path(__file__).resolve().parent / "data" / "proof_costs.json"
WIDTHS = (50, 30, 20)
CORES = (1, 16, 1000)
SMALL_DATABASE = frozenset({"kalah-ru", "kgp 6x6"})
"""Starts whose rules (``majority``) have databases of at most 22 seeds on 24 GB (one byte an
entry, a row of stores a board), below the ladder's 24 and the warm pass's 30."""
LARGE_DATABASE = frozenset({"piet-hein"})
STARTS = {  # start: (value used, what it is, the rules)
    "piet-hein": (2, "published value", Rules.preset("piet-hein")),
    "kalah-ru": (4, "deep book estimate", Rules.preset("kalah-ru")),
    "kgp 6x6": (4, "deep book estimate", Rules.preset("kgp", houses=6, seeds=6)),
}


def today(rules: Rules) -> tuple[int, int]:
    """The start's proven bounds in the shipped deep book."""
    found = shipped().proven_bounds(Position.start(rules), rules)
    if found is None:
        raise SystemExit(f"the shipped deep book has no record of the start of {rules.key}")
    return found[0]


def fit_growth(points: list[tuple[int, float]]) -> float:
    """Growth of nodes per 4 seeds nearer the value: least squares of log(nodes) on the
    distance, over ``(distance, nodes)`` points."""
    n = len(points)
    mean_d = sum(d for d, _ in points) / n
    mean_y = sum(math.log(y) for _, y in points) / n
    num = sum((d - mean_d) * (math.log(y) - mean_y) for d, y in points)
    den = sum((d - mean_d) ** 2 for d, _ in points)
    return math.exp(-4 * num / den)


class Side:
    """One side's ladder: the nearest measured test and its growth rates."""

    def __init__(self, points: list[tuple[int, float]]) -> None:
        self.points = sorted(points)  # nearest the value first
        self.far = fit_growth(self.points)
        self.near = fit_growth(self.points[:3])
        self.nearest_d, self.nearest_nodes = self.points[0]

    def nodes(self, d: int) -> float:
        """A test ``d`` seeds from the value: measured where the ladder reaches it, else
        extrapolated from the nearest test at the near rate."""
        for distance, nodes in self.points:
            if distance == d:
                return nodes
        return float(self.nearest_nodes * self.near ** ((self.nearest_d - d) / 4))


def sides(data: dict[str, Any]) -> tuple[Side, Side]:
    """The ladder's two sides."""
    ladder = data["ladder"]
    value = ladder["value"]
    lower = Side([(value - p["bound"], p["nodes"]) for p in ladder["lower"]])
    upper = Side([(p["bound"] - value, p["nodes"]) for p in ladder["upper"]])
    return lower, upper


@dataclass(frozen=True)
class Basis:
    """How a proof runs, as measured: each side's nodes against the ladder's at the same
    distance (its level; the ladder gives the growth), and its node rate per core."""

    name: str
    lower: float
    upper: float
    rate: float
    starts: frozenset[str]  # the starts whose databases it was measured with


def bases(data: dict[str, Any], lower: Side, upper: Side) -> list[Basis]:
    """The warm passes' bases (each side's level from what the pass spent on its claims), then
    the cold ladder's (its own rate; a cold refinement's overhead on both sides)."""
    value = data["ladder"]["value"]
    warm = data["warm_pass"]
    majority = data["warm_majority_pass"]
    centre = majority["value"]
    standard = data["standard_over_empty"]["ratio"]
    ladder = data["ladder"]
    tests = ladder["lower"] + ladder["upper"]
    return [
        Basis(
            "warm, 30-seed database",
            warm["lower"]["nodes"] / lower.nodes(value - warm["lower"]["bound"]),
            warm["upper"]["nodes"] / upper.nodes(warm["upper"]["bound"] - value),
            warm["nodes"] / (warm["seconds"] * warm["threads"]),
            LARGE_DATABASE,
        ),
        Basis(
            "warm, 22-seed majority database"
            + "".join(
                f" ({side} side at least: its claim is open)"
                for side in ("lower", "upper")
                if majority[side].get("open")
            ),
            majority["lower"]["nodes"]
            / (lower.nodes(centre - majority["lower"]["bound"]) * standard),
            majority["upper"]["nodes"]
            / (upper.nodes(majority["upper"]["bound"] - centre) * standard),
            majority["nodes"] / (majority["seconds"] * majority["threads"]),
            SMALL_DATABASE,
        ),
        Basis(
            "cold, 24-seed database",
            overhead(lower, upper, data),
            overhead(lower, upper, data),
            sum(p["nodes"] for p in tests) / (sum(p["seconds"] for p in tests) * ladder["threads"]),
            LARGE_DATABASE | SMALL_DATABASE,
        ),
    ]


def narrowing(lower: Side, upper: Side, width: int, basis: Basis) -> tuple[float, int, int]:
    """The cheapest (nodes, dl, du) with dl + du = width, both even (values are even)."""
    splits = [
        (basis.lower * lower.nodes(dl) + basis.upper * upper.nodes(width - dl), dl, width - dl)
        for dl in range(0, width + 1, 2)
    ]
    return min(splits)


def hours(nodes: float, rate: float, cores: int, data: dict[str, Any], chain: bool) -> float:
    """Wall hours on ``cores``: at most the frontier's positions run at once, each on a whole
    core; or (``chain``) the speed-up measured on one position, whose MTD(f) chain of tests
    caps it (the measured figures up to 4 workers, the stated limit beyond)."""
    if chain:
        measured = data["one_position"]["speedups"]
        speedup = float(measured.get(str(cores), data["one_position"]["limit"]))
    else:
        speedup = float(min(cores, data["frontier"]["positions"]))
    return nodes / rate / 3600 / speedup


def overhead(lower: Side, upper: Side, data: dict[str, Any]) -> float:
    """What a cold refinement spent against the ladder's cost of the bounds it proved: its
    tests' failed tries, restarts on emptied tables, and the alternatives of its OR nodes."""
    run = data["refinement"]
    value = data["ladder"]["value"]
    ladder = lower.nodes(value - run["lower"]) + upper.nodes(run["upper"] - value)
    return float(run["nodes"]) / ladder


def projections(
    data: dict[str, Any], lower: Side, upper: Side, basis: Basis
) -> list[dict[str, Any]]:
    """Every goal's nodes, bounds and hours on one basis."""
    standard = data["standard_over_empty"]["ratio"]
    rows: list[dict[str, Any]] = []
    for start, (value, what, rules) in STARTS.items():
        factor = 1.0 if start == "piet-hein" else standard
        if start not in basis.starts:
            continue  # measured with databases these rules do not have
        low, high = today(rules)
        for width in WIDTHS:
            nodes, dl, du = narrowing(lower, upper, width, basis)
            rows.append(
                {
                    "start": start,
                    "goal": f"{width} wide",
                    "today": f"[{low:+d}, {high:+d}]",
                    "bounds": f"[{value - dl:+d}, {value + du:+d}] ({what} {value:+d})",
                    "nodes": nodes * factor,
                }
            )
    exact = basis.lower * lower.nodes(0) + basis.upper * upper.nodes(0)
    published = float(data["whole_proof"]["nodes"])
    if "piet-hein" in basis.starts:
        rows += [
            {"start": "piet-hein", "goal": "exact (near rates to d=0)", "nodes": exact},
            {"start": "piet-hein", "goal": "exact (Rawlings' count)", "nodes": published},
            {
                "start": "standard Kalah(6,6)",
                "goal": "exact (near rates)",
                "nodes": exact * standard,
            },
            {
                "start": "standard Kalah(6,6)",
                "goal": "exact (Rawlings' x ratio)",
                "nodes": published * standard,
            },
        ]
    else:
        rows.append(
            {"start": "kalah-ru", "goal": "exact (near rates to d=0)", "nodes": exact * standard}
        )
    for row in rows:
        row["core_hours"] = row["nodes"] / basis.rate / 3600
        row["hours"] = {c: hours(row["nodes"], basis.rate, c, data, False) for c in CORES}
        row["hours_measured"] = {c: hours(row["nodes"], basis.rate, c, data, True) for c in CORES}
    return rows


def model(data: dict[str, Any]) -> dict[str, Any]:
    lower, upper = sides(data)
    found = bases(data, lower, upper)
    return {
        "growth_per_4_seeds": {
            "lower": {"far": lower.far, "near": lower.near},
            "upper": {"far": upper.far, "near": upper.near},
        },
        "bases": [
            {
                "name": b.name,
                "level": {"lower": b.lower, "upper": b.upper},
                "rate_per_core": b.rate,
                "rows": projections(data, lower, upper, b),
            }
            for b in found
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    result = model(data)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    growth = result["growth_per_4_seeds"]
    for side in ("lower", "upper"):
        g = growth[side]
        print(f"{side} side: {g['far']:.2f}x per 4 seeds over the ladder, ", end="")
        print(f"{g['near']:.2f}x near the value")
    frontier = data["frontier"]["positions"]
    limit = data["one_position"]["limit"]
    print(
        f"hours on P cores: at most {frontier} tests at once (the deep book's frontier); ", end=""
    )
    print(f"each a whole core, or [in brackets] one position's chain (at most {limit}x)")
    for basis in result["bases"]:
        level = basis["level"]
        print()
        print(
            f"{basis['name']}: nodes {level['lower']:.3g}x (lower side), {level['upper']:.3g}x "
            f"(upper side) the ladder's; {basis['rate_per_core'] / 1e6:.2f} M nodes/s per core"
        )
        print()
        cores = " | ".join(f"hours on {c}" for c in CORES)
        print(f"| start | goal | today | bounds | nodes | core-hours | {cores} |")
        print("|" + "---|" * (6 + len(CORES)))
        for row in basis["rows"]:
            cells = [
                row["start"],
                row["goal"],
                row.get("today", ""),
                row.get("bounds", ""),
                f"{row['nodes']:.2e}",
                f"{row['core_hours']:,.1f}",
                *(f"{row['hours'][c]:,.1f} [{row['hours_measured'][c]:,.1f}]" for c in CORES),
            ]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
