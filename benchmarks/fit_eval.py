"""Fit the weights of the features evaluation (``Searcher.eval_weights``) to deeper values.

Plays noisy self-play games (random first sowings, then the store difference at depth 4 with a
random move in 15 % of the turns), values a quarter of their positions with a depth-limited
search on the store difference, and fits (value - store difference) to the five features of
``kalah_core.reference.evaluation`` by least squares. Prints the weights in sixteenths of a
seed (what ``eval_weights`` takes) and the error before and after. The default weights are half
of what it fits on 10x10 and 12x12: see docs/search.md (the evaluation) for why.

    python benchmarks/fit_eval.py --houses 12 --seeds 12 [--games 80] [--depth 8]
"""

from __future__ import annotations

import argparse
import math
import random

from kalah_core import Position, Rules, is_over, legal_moves, play
from kalah_core import reference as ref
from kalah_core.solver import Engine

NAMES = ("house seeds", "extra-turn houses", "mover's capture", "opponent's capture", "overflow")


def features(position: Position) -> list[float]:
    """The five terms weighted by ``eval_weights``, signed as the evaluation adds them."""
    me = position.to_move
    mine, theirs = position.side(me), position.side(me.other)
    my_extra, my_capture, my_overflow = ref.side_features(mine, theirs)
    their_extra, their_capture, their_overflow = ref.side_features(theirs, mine)
    return [
        sum(mine) - sum(theirs),
        my_extra - their_extra,
        my_capture,
        -their_capture,
        my_overflow - their_overflow,
    ]


def least_squares(rows: list[list[float]], targets: list[float]) -> list[float]:
    """Solve the normal equations by Gaussian elimination with partial pivoting."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] * t for r, t in zip(rows, targets, strict=True)) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda k: abs(a[k][col]))
        a[col], a[pivot], b[col], b[pivot] = a[pivot], a[col], b[pivot], b[col]
        if abs(a[col][col]) < 1e-9:
            continue  # a feature that never varies: weight 0
        for k in range(col + 1, n):
            f = a[k][col] / a[col][col]
            a[k] = [x - f * y for x, y in zip(a[k], a[col], strict=True)]
            b[k] -= f * b[col]
    w = [0.0] * n
    for i in reversed(range(n)):
        if abs(a[i][i]) >= 1e-9:
            w[i] = (b[i] - sum(a[i][j] * w[j] for j in range(i + 1, n))) / a[i][i]
    return w


def samples(
    rules: Rules, games: int, depth: int, seed: int
) -> tuple[list[list[float]], list[float]]:
    rng = random.Random(seed)
    player, judge = Engine(32), Engine(128)
    player.searcher.eval_kind = judge.searcher.eval_kind = 0
    rows: list[list[float]] = []
    targets: list[float] = []
    for _ in range(games):
        position, ply = Position.start(rules), 0
        while not is_over(position, rules):
            if ply >= 4 and rng.random() < 0.25:
                analysis = judge.analyse(position, rules, depth=depth, pv_limit=1)
                if not analysis.exact:
                    rows.append(features(position))
                    targets.append(analysis.value - ref.evaluation(position, 0, ()))
            if ply < 4 or rng.random() < 0.15:
                move = rng.choice(legal_moves(position, rules))
            else:
                move = player.analyse(position, rules, depth=4, pv_limit=1).best_moves[0]
            position = play(position, rules, move).after
            ply += 1
    return rows, targets


def rmse(rows: list[list[float]], targets: list[float], w: list[float]) -> float:
    errors = [
        t - sum(x * y for x, y in zip(r, w, strict=True))
        for r, t in zip(rows, targets, strict=True)
    ]
    return math.sqrt(sum(e * e for e in errors) / len(errors))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="kgp")
    parser.add_argument("--houses", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--games", type=int, default=80)
    parser.add_argument("--depth", type=int, default=8, help="of the searches valuing positions")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rules = Rules.preset(args.preset, houses=args.houses, seeds=args.seeds)
    rows, targets = samples(rules, args.games, args.depth, args.seed)
    w = least_squares(rows, targets)
    print(f"{args.preset} {args.houses}x{args.seeds}: {len(rows)} positions, depth {args.depth}")
    for name, weight in zip(NAMES, w, strict=True):
        print(f"  {name:20s} {16 * weight:+7.1f} sixteenths")
    print(f"  weights: {','.join(str(round(16 * x)) for x in w)}")
    zero = [0.0] * len(w)
    print(
        f"  error (seeds, rms): store difference {rmse(rows, targets, zero):.2f}, "
        f"fitted {rmse(rows, targets, w):.2f}"
    )


if __name__ == "__main__":
    main()
