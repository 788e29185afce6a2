"""A match between two heuristic evaluations of the depth-limited search.

`stores`: the store difference only. `sides`: the store difference plus a quarter of the
difference of seeds still in each side's houses. `features`: the store difference plus
weighted features (`Searcher.eval_weights`, `--weights`, sixteenths of a seed). Each pair of
games starts from the same random opening (a few random sowings), once with each evaluation
as South, so the opening favours neither. Prints wins, draws and losses of the first
evaluation (`--a`, default `sides`) against the second (`--b`, default `stores`).

    python benchmarks/eval_match.py [--games 200] [--depth 6] [--preset kalah]
    python benchmarks/eval_match.py --preset kgp --houses 10 --seeds 10   # a KGP board
    python benchmarks/eval_match.py --time-ms 200 ...   # deepening for 200 ms a move instead
    python benchmarks/eval_match.py --a features --weights 2,32,13,0,0 --preset kgp \\
        --houses 12 --seeds 12
"""

from __future__ import annotations

import argparse
import random
import time

from kalah_core import Position, Rules, Side, is_over, legal_moves, outcome, play
from kalah_core.game import Move
from kalah_core.solver import Engine

EVALS = {"stores": 0, "sides": 1, "features": 2}


def engine_for(kind: str, weights: tuple[int, ...] | None) -> Engine:
    engine = Engine(16)
    engine.searcher.eval_kind = EVALS[kind]
    if weights is not None:
        engine.searcher.eval_weights = weights
    return engine


def timed_move(engine: Engine, position: Position, rules: Rules, time_ms: float) -> Move:
    """The best move of the deepest search completed in ``time_ms``, deepening one sowing at a
    time on the engine's table, as the KGP agent does."""
    until = time.perf_counter() + time_ms / 1000
    move = engine.analyse(position, rules, depth=1, pv_limit=1).best_moves[0]
    depth = 2
    while (left := (until - time.perf_counter()) * 1000) > 1:
        analysis = engine.analyse(position, rules, depth=depth, time_ms=left, pv_limit=1)
        if not analysis.exact and (analysis.depth or 0) < depth:
            break
        move = analysis.best_moves[0]
        if analysis.exact:
            break
        depth += 1
    return move


def play_game(
    start: Position, rules: Rules, south: Engine, north: Engine, depth: int, time_ms: float
) -> int:
    """Final store difference South minus North."""
    position = start
    while not is_over(position, rules):
        engine = south if position.to_move is Side.SOUTH else north
        if time_ms:
            move = timed_move(engine, position, rules, time_ms)
        else:
            move = engine.analyse(position, rules, depth=depth, pv_limit=1).best_moves[0]
        position = play(position, rules, move).after
    result = outcome(position, rules)
    assert result is not None
    return result.score[0] - result.score[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=200, help="games (pairs of openings x 2)")
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument(
        "--time-ms", type=float, default=0, help="deepen for this long a move instead of --depth"
    )
    parser.add_argument("--preset", default="kalah")
    parser.add_argument("--houses", type=int, default=None, help="default: the preset's")
    parser.add_argument("--seeds", type=int, default=None, help="default: the preset's")
    parser.add_argument("--seed", type=int, default=1, help="of the random openings")
    parser.add_argument("--a", choices=sorted(EVALS), default="sides", help="the evaluation scored")
    parser.add_argument("--b", choices=sorted(EVALS), default="stores", help="its opponent")
    parser.add_argument(
        "--weights", default=None, help="features' weights, comma-separated (default: the engine's)"
    )
    args = parser.parse_args()
    weights = None if args.weights is None else tuple(int(w) for w in args.weights.split(","))
    board = {k: v for k, v in (("houses", args.houses), ("seeds", args.seeds)) if v is not None}
    rules = Rules.preset(args.preset, **board)
    rng = random.Random(args.seed)
    first, second = engine_for(args.a, weights), engine_for(args.b, weights)
    tally = {"win": 0, "draw": 0, "loss": 0}
    margin = 0
    for _ in range(args.games // 2):
        opening = Position.start(rules)
        for _ in range(rng.randint(2, 6)):
            if is_over(opening, rules):
                break
            opening = play(opening, rules, rng.choice(legal_moves(opening, rules))).after
        if is_over(opening, rules):
            continue
        for first_is_south in (True, False):
            south, north = (first, second) if first_is_south else (second, first)
            diff = play_game(opening, rules, south, north, args.depth, args.time_ms)
            mine = diff if first_is_south else -diff
            margin += mine
            tally["win" if mine > 0 else "loss" if mine < 0 else "draw"] += 1
    played = sum(tally.values())
    print(
        f"{args.preset} {rules.houses}x{rules.seeds}, "
        + (f"{args.time_ms:g} ms a move" if args.time_ms else f"depth {args.depth}")
        + f", {played} games: "
        f"evaluation '{args.a}' against '{args.b}'"
        + (f" (weights {args.weights})" if args.weights else "")
    )
    print(
        f"  wins {tally['win']}  draws {tally['draw']}  losses {tally['loss']}  "
        f"score {(tally['win'] + tally['draw'] / 2) / played:.1%}  "
        f"mean margin {margin / played:+.2f}"
    )


if __name__ == "__main__":
    main()
