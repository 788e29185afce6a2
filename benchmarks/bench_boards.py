"""The engine on every board size: KGP boards at 1 s, and the big board against the one-word
board on the same trees.

    python benchmarks/bench_boards.py                 # all three parts
    python benchmarks/bench_boards.py --part kgp --time-ms 1000

Parts:

- ``kgp``: the start of 6x6, 8x8, 10x10 and 12x12 under the ``kgp`` preset (KGP's tournament
  boards), analysed for ``--time-ms`` on one thread from an empty table: nodes, nodes/s, the
  heuristic depth reached, the estimate and the proven bounds.
- ``perft``: perft from the same positions through the one-word board (``_board``) and the big
  board (``_bigboard``, which takes any board up to 12 houses): sowings per second of each and
  their ratio, medians of ``--repeat`` runs, the two interleaved.
- ``search``: exact solves of positions that fit the one-word board, and of the same
  positions with 300 seeds added to the stores (equally, so the value shifts by nothing):
  outside ``majority`` the stores do not change the future, so the trees are the same, and the
  second goes to the big board. Nodes and nodes/s of each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from kalah_core import Position, Rules, _bigboard, _board, game, parse_position
from kalah_core.solver import Engine

KGP_BOARDS = [(6, 6), (8, 8), (10, 10), (12, 12)]
PERFT_CASES = [
    (Rules(), "start", 9),
    (Rules.preset("kgp"), "start", 7),
    (Rules(seeds=6), "start", 8),
]
SEARCH_CASES = [
    (Rules(houses=6, seeds=3), "start"),
    (Rules(), "371022-4-042913-10-s"),
    (Rules(), "098000-5-911114-9-n"),
    (Rules(), "181023-10-331a02-4-s"),
]


def kgp(time_ms: float) -> None:
    print(f"kgp starts, {time_ms:.0f} ms, one thread, empty 64 MiB table:")
    for houses, seeds in KGP_BOARDS:
        rules = Rules.preset("kgp", houses=houses, seeds=seeds)
        start = Position.start(rules)
        engine = Engine(64, threads=1)
        a = engine.analyse(start, rules, time_ms=time_ms)
        board = "big" if game.board_module(start) is _bigboard else "one-word"
        print(
            f"  {houses:2}x{seeds:<2} ({board:8} board) {a.nodes:>11,} nodes "
            f"{a.nodes / a.time_ms / 1000:6.2f} Mnodes/s  depth {a.depth}  "
            f"estimate {a.value:+d}  proven [{a.lower:+d}, {a.upper:+d}]  {a.time_ms:.0f} ms"
        )


def perft(repeat: int) -> None:
    print(f"perft, one-word board against big board (median of {repeat}, interleaved):")
    for rules, text, depth in PERFT_CASES:
        position = parse_position(text, rules)
        times: dict[str, list[float]] = {"small": [], "big": []}
        counts = set()
        for _ in range(repeat):
            for name, module in (("small", _board), ("big", _bigboard)):
                began = time.perf_counter()
                counts.add(module.perft(position, rules, depth))
                times[name].append(time.perf_counter() - began)
        assert len(counts) == 1, counts
        total = sum(game.perft(position, rules, d) for d in range(1, depth + 1))
        small, big = statistics.median(times["small"]), statistics.median(times["big"])
        print(
            f"  {rules.key} {position.compact()} depth {depth}: {total:,} sowings; "
            f"one-word {total / small / 1e6:6.1f} M/s, big {total / big / 1e6:6.1f} M/s, "
            f"big/one-word time {big / small:.2f}"
        )


def search(repeat: int) -> None:
    print(f"exact solves, the same trees on both boards (median of {repeat}):")
    for rules, text in SEARCH_CASES:
        position = parse_position(text, rules)
        shifted = Position(
            position.south,
            position.north,
            (position.stores[0] + 150, position.stores[1] + 150),
            position.to_move,
        )
        assert game.board_module(position) is _board
        assert game.board_module(shifted) is _bigboard
        rows = []
        for name, p in (("one-word", position), ("big", shifted)):
            runs = []
            for _ in range(repeat):
                engine = Engine(64, threads=1)
                a = engine.analyse(p, rules)
                assert a.exact
                runs.append((a.time_ms, a.nodes, a.value))
            ms = statistics.median(r[0] for r in runs)
            rows.append((name, ms, runs[0][1], runs[0][2]))
        (_, small_ms, small_nodes, small_value), (_, big_ms, big_nodes, big_value) = rows
        assert small_value == big_value
        print(
            f"  {rules.key} {position.compact()}: value {small_value:+d}; one-word "
            f"{small_nodes:,} nodes {small_nodes / small_ms / 1000:.2f} Mnodes/s; big "
            f"{big_nodes:,} nodes {big_nodes / big_ms / 1000:.2f} Mnodes/s; big/one-word "
            f"time {big_ms / small_ms:.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["kgp", "perft", "search", "all"], default="all")
    parser.add_argument("--time-ms", type=float, default=1000.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.part in ("kgp", "all"):
        kgp(args.time_ms)
    if args.part in ("perft", "all"):
        perft(args.repeat)
    if args.part in ("search", "all"):
        search(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
