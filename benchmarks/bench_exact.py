"""How often an analysis at the default budget is exact, by preset and game phase, before and
after the opening book and the per-preset databases.

Positions come from self-play games (a depth-4 heuristic search picks each move, one move in
five is random; fixed seed): one position per game in each phase, after 0-10, 10-20 and 20-40
sowings. Each is analysed as ``/v1/analysis`` does (every move's value, ``time_ms`` budget,
a warm engine whose table is cleared between positions) by:

- before: the databases of ``--before`` (e.g. the old default, the 16-seed database of the
  ``kalah`` rules only) and the book of ``--before-book`` (none by default);
- after: the largest database of each preset's rules in ``--after`` (the cache folder by
  default: what the server builds) and the book of ``--after-book`` (the shipped one).

    python benchmarks/bench_exact.py --before OLD.egdb  # e.g. the old 16-seed kalah database
    git show OLD:kalah_core/data/book.bin > old-book.bin  # an earlier state, book included
    python benchmarks/bench_exact.py --before k-24.egdb k2-24.egdb --before-book old-book.bin
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

from kalah_core import Position, Rules, databases, legal_moves, play
from kalah_core.book import Book, shipped
from kalah_core.egdb import EndgameDatabase
from kalah_core.solver import Engine

PHASES = ((0, 10), (10, 20), (20, 40))
PRESETS = ("kalah", "kalah-pie", "kalaha", "piet-hein")


def self_play(rules: Rules, rng: random.Random, sowings: int) -> list[Position]:
    """The positions of one self-play game, after 0, 1, ... sowings (until it ends)."""
    engine = Engine(tt_mb=4)
    line = [Position.start(rules)]
    while len(line) <= sowings:
        position = line[-1]
        moves = legal_moves(position, rules)
        if not moves:
            break
        if rng.random() < 0.2:
            move = rng.choice(moves)
        else:
            move = engine.analyse(position, rules, depth=4).best_moves[0]
        result = play(position, rules, move)
        if result.over:
            break
        line.append(result.after)
    return line


def sample(rules: Rules, games: int, seed: int) -> dict[tuple[int, int], list[Position]]:
    rng = random.Random(seed)
    found: dict[tuple[int, int], list[Position]] = {phase: [] for phase in PHASES}
    for _ in range(games):
        line = self_play(rules, rng, PHASES[-1][1])
        for low, high in PHASES:
            if len(line) > low:
                found[(low, high)].append(line[rng.randrange(low, min(high, len(line)))])
    return found


def run(engine: Engine, positions: Sequence[Position], rules: Rules, time_ms: int) -> list[float]:
    """Per position: its time in ms, negative when the answer was not exact."""
    out = []
    for position in positions:
        engine.clear()
        started = time.perf_counter()
        analysis = engine.analyse(position, rules, time_ms=time_ms)
        ms = (time.perf_counter() - started) * 1000
        out.append(ms if analysis.exact else -ms)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", nargs="*", default=[], help="database files of 'before'")
    parser.add_argument("--before-book", help="opening book file of 'before' (default: none)")
    parser.add_argument("--after", default="auto", help="KALAH_EGDB_PATH value of 'after'")
    parser.add_argument("--after-book", help="opening book file of 'after' (default: shipped)")
    parser.add_argument("--games", type=int, default=8, help="games per preset")
    parser.add_argument("--time-ms", type=int, default=1000)
    parser.add_argument("--presets", nargs="*", default=list(PRESETS))
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()

    old_book = Book.load(args.before_book) if args.before_book else None
    new_book = Book.load(args.after_book) if args.after_book else shipped()
    before = Engine(
        tt_mb=64, databases=[EndgameDatabase.open_any(p) for p in args.before], book=old_book
    )
    after = Engine(tt_mb=64, databases=databases.open_best(args.after), book=new_book)
    print(f"before: {[str(d.path) for d in before.databases]}, book {old_book and old_book.info()}")
    print(f"after:  {[str(d.path) for d in after.databases]}, book {new_book.info()}")
    print(f"{args.games} self-play games per preset, {args.time_ms} ms per position\n")
    print(
        f"{'preset':<10} {'sowings':>8} {'n':>3}  {'exact before':>12}  {'exact after':>11}  "
        f"{'median ms before':>16}  {'after':>7}"
    )
    totals = [0, 0, 0]
    for preset in args.presets:
        rules = Rules.preset(preset)
        for (low, high), positions in sample(rules, args.games, args.seed).items():
            old = run(before, positions, rules, args.time_ms)
            new = run(after, positions, rules, args.time_ms)
            exact_old = sum(t >= 0 for t in old)
            exact_new = sum(t >= 0 for t in new)
            totals = [totals[0] + len(positions), totals[1] + exact_old, totals[2] + exact_new]
            print(
                f"{preset:<10} {f'{low}-{high}':>8} {len(positions):>3}  "
                f"{exact_old:>5}/{len(positions):<2} {exact_old / len(positions):4.0%}  "
                f"{exact_new:>4}/{len(positions):<2} {exact_new / len(positions):4.0%}  "
                f"{statistics.median(abs(t) for t in old):16.1f}  "
                f"{statistics.median(abs(t) for t in new):7.1f}",
                flush=True,
            )
    n, old_exact, new_exact = totals
    print(
        f"\nall: {old_exact}/{n} exact before ({old_exact / n:.0%}), "
        f"{new_exact}/{n} after ({new_exact / n:.0%}); ratio {new_exact / max(old_exact, 1):.2f}"
    )


if __name__ == "__main__":
    main()
