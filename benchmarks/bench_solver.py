"""Solver figures in one run: start positions, the time-limit guarantee, mid-game positions.

Prints medians (and maxima where a bound matters) so that runs can be compared as ratios.
Each figure is one core (unless --threads), from an empty transposition table, start-up excluded.

    python benchmarks/bench_solver.py                 # everything (Kalah(6,4) takes a while)
    python benchmarks/bench_solver.py --quick         # skip Kalah(6,4)
    python benchmarks/bench_solver.py --egdb PATH     # probe an endgame database (repeatable)
    python benchmarks/bench_solver.py --k65           # also Kalah(6,5) from the start
    python benchmarks/bench_solver.py --build 24      # first build the 24-seed databases of
                                                      # both capture rules (size, build time)
    python benchmarks/bench_solver.py --k66-tests=-30,+39 --k66-capture always
                                                      # null-window tests of the Kalah(6,6) start:
                                                      # which bounds it proves, each within a limit
    python benchmarks/bench_solver.py --egdb F --k66-capture always --threads 2 --tt-mb 1024 \
        --k66-seconds 450 --k66-tests=-40,-36,-32,-28,-24,-20,-16,+44,+40,+36,+32
                                                      # a ladder: each test's nodes against the
                                                      # one before on its side, so how a bound's
                                                      # cost grows with its distance from the value
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from kalah_core import Position, Rules, is_over, legal_moves, play
from kalah_core.egdb import EndgameDatabase, build, default_path
from kalah_core.results import Analysis
from kalah_core.solver import Engine


def timed(
    engine: Engine, position: Position, rules: Rules, **limits: Any
) -> tuple[float, Analysis]:
    engine.clear()
    started = time.perf_counter()
    analysis = engine.analyse(position, rules, **limits)
    return (time.perf_counter() - started) * 1000.0, analysis


def midgame_positions(count: int, max_seeds: int, seed: int = 7) -> list[Position]:
    """Positions of random Kalah(6,4) games with at most ``max_seeds`` seeds in houses."""
    rules = Rules()
    rng = random.Random(seed)
    found: list[Position] = []
    while len(found) < count:
        position = Position.start(rules)
        while not is_over(position, rules):
            position = play(position, rules, rng.choice(legal_moves(position, rules))).after
            rest = sum(position.south) + sum(position.north)
            if rest <= max_seeds and not is_over(position, rules):
                found.append(position)
                break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="skip Kalah(6,4) from the start")
    parser.add_argument("--tt-mb", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="cores per search (default 1)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--midgame", type=int, default=200, help="number of mid-game positions")
    parser.add_argument("--k65", action="store_true", help="also Kalah(6,5) (minutes)")
    parser.add_argument(
        "--big-repeat", type=int, default=1, help="runs of Kalah(6,4) and (6,5) empty capture"
    )
    parser.add_argument(
        "--egdb",
        action="append",
        default=[],
        metavar="PATH",
        help="endgame database to probe (repeatable; each for its own rules)",
    )
    parser.add_argument(
        "--build",
        type=int,
        metavar="N",
        help="build the N-seed databases of both capture rules into --dir first, and use them",
    )
    parser.add_argument("--dir", default="/tmp", help="where --build writes (default /tmp)")
    parser.add_argument(
        "--k66-tests",
        metavar="B,B,...",
        help="only run null-window tests 'value >= B' of the Kalah(6,6) start, each from an "
        "empty table within --k66-seconds",
    )
    parser.add_argument("--k66-seconds", type=float, default=120.0)
    parser.add_argument("--k66-capture", choices=("nonempty", "always"), default="nonempty")
    args = parser.parse_args()
    paths = list(args.egdb)
    if args.build is not None:
        print(f"endgame databases, {args.build} seeds, every core (size, build s, write s)")
        for rules in (Rules(), Rules(capture="always")):
            stats = build(
                default_path(rules, args.build, args.dir), rules, args.build, progress=False
            )
            print(
                f"  {stats.key!s:<28} {stats.file_bytes:>15,} bytes  "
                f"{stats.solve_seconds:7.1f} s  {stats.write_seconds:5.1f} s"
            )
            paths.append(str(stats.path))
    started = time.perf_counter()
    databases = [EndgameDatabase.open_any(path) for path in paths]
    engine = Engine(args.tt_mb, databases, threads=args.threads)
    print(
        f"engine start-up {1000 * (time.perf_counter() - started):.1f} ms "
        f"({len(databases)} database(s): {', '.join(map(repr, databases)) or 'none'})"
    )

    if args.k66_tests:
        bounds_of_kalah66(engine, args)
        return

    print("start positions (value, median ms over repeats [min-max], nodes, Mnodes/s)")
    cases = [
        ("Kalah(6,3) standard", Rules(seeds=3), args.repeat, True),
        ("Kalah(6,3) standard, all moves", Rules(seeds=3), args.repeat, False),
    ]
    if not args.quick:
        cases += [
            ("Kalah(6,4) empty capture", Rules(capture="always"), args.big_repeat, True),
            ("Kalah(6,4) standard", Rules(), args.big_repeat, True),
        ]
    if args.k65:
        cases += [
            ("Kalah(6,5) empty capture", Rules(seeds=5, capture="always"), args.big_repeat, True),
            ("Kalah(6,5) standard", Rules(seeds=5), 1, True),
        ]
    for title, rules, repeat, best_only in cases:
        runs = [
            timed(engine, Position.start(rules), rules, prove="value" if best_only else "all")
            for _ in range(repeat)
        ]
        ms = statistics.median(r[0] for r in runs)
        low, high = min(r[0] for r in runs), max(r[0] for r in runs)
        a = runs[-1][1]
        print(
            f"  {title:<34} {a.value:+d} {'exact' if a.exact else 'HEURISTIC'}  "
            f"{ms:9.1f} ms [{low:.0f}-{high:.0f}]  {a.nodes:>12,} nodes  "
            f"{a.nodes / ms / 1000:6.2f}"
        )

    print("time limit 100 ms on the Kalah(6,6) start (elapsed ms: median, max)")
    rules = Rules(seeds=6)
    runs = [
        timed(engine, Position.start(rules), rules, time_ms=100) for _ in range(args.repeat * 2)
    ]
    elapsed = [r[0] for r in runs]
    a = runs[-1][1]
    print(
        f"  median {statistics.median(elapsed):.1f}  max {max(elapsed):.1f}  "
        f"best {a.best_moves} value {a.value:+d} "
        f"bounds [{a.lower:+d}, {a.upper:+d}] depth {a.depth}"
    )

    print(f"{args.midgame} mid-game Kalah(6,4) positions, <= 30 seeds in houses, every move exact")
    times, nodes, inexact = [], 0, 0
    for position in midgame_positions(args.midgame, 30):
        ms, a = timed(engine, position, Rules())
        times.append(ms)
        nodes += a.nodes
        inexact += not all(m.exact for m in a.moves)
    print(
        f"  median {statistics.median(times):.1f} ms  max {max(times):.1f} ms  "
        f"mean nodes {nodes / len(times):,.0f}  not exact: {inexact}"
    )


def bounds_of_kalah66(engine: Engine, args: argparse.Namespace) -> None:
    """A far-off bound is much cheaper to prove than one near the value: each test says which,
    and what it cost against the test before it (a ladder of tests shows how fast the cost
    grows as the bound nears the value; only tests on the same side of the value compare)."""
    rules = Rules(seeds=6, capture=args.k66_capture)
    start = Position.start(rules)
    searcher = engine.searcher
    print(
        f"Kalah(6,6) start, {rules.capture} capture, tests within {args.k66_seconds:.0f} s each, "
        f"{engine.threads} thread(s), {args.tt_mb} MiB table"
    )
    last: tuple[int, bool] | None = None  # the last test's nodes and whether it held, if it ended
    for beta in (int(b) for b in args.k66_tests.split(",")):
        engine.clear()
        searcher.begin(start, rules, args.k66_seconds * 1000.0, 0)
        before = searcher.nodes
        started = time.perf_counter()
        v = searcher.probe(start, rules, beta - 1, beta)
        seconds = time.perf_counter() - started
        nodes = searcher.nodes - before
        if v is None:
            verdict = "unresolved"
        else:
            verdict = f"proven value >= {v:+d}" if v >= beta else f"proven value <= {v:+d}"
        held = v is not None and v >= beta
        growth = ""
        if v is not None and last is not None and last[1] == held:  # same side of the value
            growth = f"  {nodes / last[0]:5.2f}x the nodes of the test before"
        print(
            f"  value >= {beta:+d}?  {verdict:<24} {seconds:7.1f} s  {nodes:>14,} nodes{growth}",
            flush=True,
        )
        last = (nodes, held) if v is not None else None


if __name__ == "__main__":
    main()
