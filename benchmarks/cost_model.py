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
- **A refinement's overhead**: the nodes a real refinement spent to prove its bounds, over the
  ladder's cost of the same two bounds (failed tries on emptied tables, the alternatives of
  OR nodes), multiplies every narrowing and the near-rate exact projection.

What the model cannot see: whether the growth steepens before ``d = 0`` (the two exact
projections differ by that), frontier tests being cheaper than the root's (about 4x on the
lower side in the piet-hein refinement, HISTORY.md 2026-11-27), and kalah-ru's lack of a
database (``majority``): its figures are piet-hein's rates applied to its estimate.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "proof_costs.json"
WIDTHS = (50, 30, 20)
CORES = (1, 16, 1000)
STARTS = {  # rules: (value used, what it is, today's proven bounds from the deep book)
    "piet-hein": (2, "published value", (-12, 34)),
    "kalah-ru": (4, "deep book estimate", (-30, 48)),
    "kgp 6x6": (4, "deep book estimate", (-30, 48)),
}


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
        return self.nearest_nodes * self.near ** ((self.nearest_d - d) / 4)


def sides(data: dict[str, Any]) -> tuple[Side, Side, float]:
    """The ladder's two sides and the node rate per core (nodes a second on one thread)."""
    ladder = data["ladder"]
    value = ladder["value"]
    lower = Side([(value - p["bound"], p["nodes"]) for p in ladder["lower"]])
    upper = Side([(p["bound"] - value, p["nodes"]) for p in ladder["upper"]])
    tests = ladder["lower"] + ladder["upper"]
    rate = sum(p["nodes"] for p in tests) / (sum(p["seconds"] for p in tests) * ladder["threads"])
    return lower, upper, rate


def narrowing(lower: Side, upper: Side, width: int) -> tuple[float, int, int]:
    """The cheapest (nodes, dl, du) with dl + du = width, both even (values are even)."""
    splits = [
        (lower.nodes(dl) + upper.nodes(width - dl), dl, width - dl) for dl in range(0, width + 1, 2)
    ]
    return min(splits)


def hours(nodes: float, rate: float, cores: int, data: dict[str, Any], chain: bool) -> float:
    """Wall hours on ``cores``: at most the frontier's positions run at once, each on a whole
    core; or (``chain``) the speed-up measured on one position, whose MTD(f) chain of tests
    caps it (the measured figures up to 4 workers, the stated limit beyond)."""
    if chain:
        measured = data["one_position"]["speedups"]
        speedup = measured.get(str(cores), data["one_position"]["limit"])
    else:
        speedup = min(cores, data["frontier"]["positions"])
    return nodes / rate / 3600 / speedup


def overhead(lower: Side, upper: Side, data: dict[str, Any]) -> float:
    """What a refinement spent against the ladder's cost of the bounds it proved: its tests'
    failed tries, restarts on emptied tables, and the alternatives of its OR nodes."""
    run = data["refinement"]
    value = data["ladder"]["value"]
    ladder = lower.nodes(value - run["lower"]) + upper.nodes(run["upper"] - value)
    return float(run["nodes"]) / ladder


def model(data: dict[str, Any]) -> dict[str, Any]:
    lower, upper, rate = sides(data)
    spent = overhead(lower, upper, data)
    rows = []
    for start, (value, basis, (low, high)) in STARTS.items():
        factor = 1.0 if start == "piet-hein" else data["standard_over_empty"]["ratio"]
        for width in WIDTHS:
            nodes, dl, du = narrowing(lower, upper, width)
            rows.append(
                {
                    "start": start,
                    "goal": f"{width} wide",
                    "today": f"[{low:+d}, {high:+d}]",
                    "bounds": f"[{value - dl:+d}, {value + du:+d}] ({basis} {value:+d})",
                    "nodes": nodes * factor * spent,
                }
            )
    exact_ladder = lower.nodes(0) + upper.nodes(0)
    exact_published = float(data["whole_proof"]["nodes"])
    standard = data["standard_over_empty"]["ratio"]
    rows += [
        {"start": "piet-hein", "goal": "exact (near rates to d=0)", "nodes": exact_ladder * spent},
        {"start": "piet-hein", "goal": "exact (Rawlings' count)", "nodes": exact_published},
        {
            "start": "standard Kalah(6,6)",
            "goal": "exact (near rates)",
            "nodes": exact_ladder * spent * standard,
        },
        {
            "start": "standard Kalah(6,6)",
            "goal": "exact (Rawlings' x ratio)",
            "nodes": exact_published * standard,
        },
    ]
    for row in rows:
        row["core_hours"] = row["nodes"] / rate / 3600
        row["hours"] = {c: hours(row["nodes"], rate, c, data, False) for c in CORES}
        row["hours_measured"] = {c: hours(row["nodes"], rate, c, data, True) for c in CORES}
    return {
        "rate_per_core": rate,
        "refinement_overhead": spent,
        "growth_per_4_seeds": {
            "lower": {"far": lower.far, "near": lower.near},
            "upper": {"far": upper.far, "near": upper.near},
        },
        "rows": rows,
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
    print(f"node rate: {result['rate_per_core'] / 1e6:.2f} M nodes/s per core (the ladder's)")
    for side in ("lower", "upper"):
        g = growth[side]
        print(f"{side} side: {g['far']:.2f}x per 4 seeds over the ladder, ", end="")
        print(f"{g['near']:.2f}x near the value")
    print(f"a refinement's overhead over the ladder: {result['refinement_overhead']:.2f}x")
    frontier = data["frontier"]["positions"]
    limit = data["one_position"]["limit"]
    print(
        f"hours on P cores: at most {frontier} tests at once (the deep book's frontier); ", end=""
    )
    print(f"each a whole core, or [in brackets] one position's chain (at most {limit}x)")
    print()
    cores = " | ".join(f"hours on {c}" for c in CORES)
    print(f"| start | goal | today | bounds | nodes | core-hours | {cores} |")
    print("|" + "---|" * (6 + len(CORES)))
    for row in result["rows"]:
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
