"""A match between the two heuristic evaluations of the depth-limited search.

`stores`: the store difference only. `sides` (the default): the store difference plus a
quarter of the difference of seeds still in each side's houses. Each pair of games starts
from the same random opening (a few random sowings), once with each evaluation as South, so
the opening favours neither. Prints wins, draws and losses of `sides` against `stores`.

    python benchmarks/eval_match.py [--games 200] [--depth 6] [--preset kalah]
    python benchmarks/eval_match.py --preset kgp --houses 10 --seeds 10   # a KGP board
"""

from __future__ import annotations

import argparse
import random

from kalah_core import Position, Rules, Side, is_over, legal_moves, outcome, play
from kalah_core.solver import Engine

EVALS = {"stores": 0, "sides": 1}


def engine_for(kind: str) -> Engine:
    engine = Engine(16)
    engine.searcher.eval_kind = EVALS[kind]
    return engine


def play_game(start: Position, rules: Rules, south: Engine, north: Engine, depth: int) -> int:
    """Final store difference South minus North."""
    position = start
    while not is_over(position, rules):
        engine = south if position.to_move is Side.SOUTH else north
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
    parser.add_argument("--preset", default="kalah")
    parser.add_argument("--houses", type=int, default=None, help="default: the preset's")
    parser.add_argument("--seeds", type=int, default=None, help="default: the preset's")
    parser.add_argument("--seed", type=int, default=1, help="of the random openings")
    args = parser.parse_args()
    board = {k: v for k, v in (("houses", args.houses), ("seeds", args.seeds)) if v is not None}
    rules = Rules.preset(args.preset, **board)
    rng = random.Random(args.seed)
    sides, stores = engine_for("sides"), engine_for("stores")
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
        for sides_is_south in (True, False):
            south, north = (sides, stores) if sides_is_south else (stores, sides)
            diff = play_game(opening, rules, south, north, args.depth)
            mine = diff if sides_is_south else -diff
            margin += mine
            tally["win" if mine > 0 else "loss" if mine < 0 else "draw"] += 1
    played = sum(tally.values())
    print(
        f"{args.preset} {rules.houses}x{rules.seeds}, depth {args.depth}, {played} games: "
        "evaluation 'sides' against 'stores'"
    )
    print(
        f"  wins {tally['win']}  draws {tally['draw']}  losses {tally['loss']}  "
        f"score {(tally['win'] + tally['draw'] / 2) / played:.1%}  "
        f"mean margin {margin / played:+.2f}"
    )


if __name__ == "__main__":
    main()
