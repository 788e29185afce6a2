"""A majority database against none: the same positions proven with and without it.

Under ``majority`` (``kalah-ru``, KGP) the stores decide when the game ends, so a database
holds a value for each store the mover may hold (format version 5). This draws random
positions of the rules' game (random legal moves from the start until at most ``--max`` seeds
are left in houses, kept when at least ``--min`` are), proves each one's value
(``prove="value"``, what a bounds test needs) with the database and without it, each on a
fresh engine and table, the database first, and prints per position and in total the nodes
and seconds of both and their ratios (above 1: the database saves). Every value is checked
equal. Build the database first (both cores; 20 seeds: 4.4 GB, about two minutes)::

    kalah egdb build --rules kalah-ru --seeds 20 -o /work/egdb/ru-20.egdb
    python benchmarks/bench_majority_egdb.py --egdb /work/egdb/ru-20.egdb --min 36 --max 40

``--houses 6 --game-seeds 6 --rules kgp`` for KGP's 6x6 board (its database built with
``--rules kgp --houses 6 --game-seeds 6``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from kalah_core import Position, Rules
from kalah_core import reference as ref
from kalah_core.egdb import EndgameDatabase
from kalah_core.solver import Engine


def in_houses(position: Position) -> int:
    return sum(position.south) + sum(position.north)


def positions(rules: Rules, low: int, high: int, count: int, seed: int) -> list[Position]:
    """``count`` positions of ``low``..``high`` seeds in houses, reached by random play."""
    rng = random.Random(seed)
    found: list[Position] = []
    while len(found) < count:
        position = Position.start(rules)
        while not ref.is_over(position, rules) and in_houses(position) > high:
            move = rng.choice(ref.legal_moves(position, rules))
            position = ref.play(position, rules, move)[0]
        if not ref.is_over(position, rules) and in_houses(position) >= low:
            found.append(position)
    return found


def solve(
    position: Position, rules: Rules, databases: list[EndgameDatabase], tt_mb: int
) -> tuple[int, int, float]:
    engine = Engine(tt_mb=tt_mb, databases=databases)
    began = time.perf_counter()
    answer = engine.analyse(position, rules, prove="value")
    assert answer.exact, position
    return answer.value, answer.nodes, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--egdb", required=True, help="a majority database of the rules")
    parser.add_argument("--rules", default="kalah-ru")
    parser.add_argument("--houses", type=int, default=None)
    parser.add_argument("--game-seeds", type=int, default=None, help="seeds a house starts with")
    parser.add_argument("--min", type=int, default=36, help="fewest seeds in houses")
    parser.add_argument("--max", type=int, default=40, help="most seeds in houses")
    parser.add_argument("--count", type=int, default=4, help="positions")
    parser.add_argument("--seed", type=int, default=5, help="of the random play")
    parser.add_argument("--tt-mb", type=int, default=256)
    args = parser.parse_args()
    options = {k: v for k, v in (("houses", args.houses), ("seeds", args.game_seeds)) if v}
    rules = Rules.preset(args.rules, **options)
    database = EndgameDatabase.open(args.egdb, rules)
    print(f"{rules.key}: {database.path.name} ({database.max_seeds} seeds), table {args.tt_mb} MB")
    print("seeds  stores    value  nodes with / without      seconds with / without  ratio")
    totals = {"with": [0, 0.0], "without": [0, 0.0]}
    ratios = []
    for position in positions(rules, args.min, args.max, args.count, args.seed):
        value, nodes, seconds = solve(position, rules, [database], args.tt_mb)
        alone, alone_nodes, alone_seconds = solve(position, rules, [], args.tt_mb)
        assert value == alone, (position, value, alone)
        totals["with"][0] += nodes
        totals["with"][1] += seconds
        totals["without"][0] += alone_nodes
        totals["without"][1] += alone_seconds
        ratios.append(alone_seconds / seconds)
        print(
            f"{in_houses(position):5}  {position.stores!s:8} {value:+5}  "
            f"{nodes:12,} / {alone_nodes:12,}  {seconds:8.2f} / {alone_seconds:8.2f}  "
            f"{alone_seconds / seconds:6.1f}x"
        )
    (nodes, seconds), (alone_nodes, alone_seconds) = totals["with"], totals["without"]
    print(
        f"total: nodes {nodes:,} / {alone_nodes:,} ({alone_nodes / nodes:.1f}x fewer), "
        f"{seconds:.2f} / {alone_seconds:.2f} s ({alone_seconds / seconds:.1f}x faster; "
        f"median per position {statistics.median(ratios):.1f}x)"
    )


if __name__ == "__main__":
    main()
