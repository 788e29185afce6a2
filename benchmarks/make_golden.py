"""Write tests/data/golden/<preset>.json: one golden replayed game per preset.

Every game is played through the plain-Python reference (``kalah_core.reference``), never
the compiled engine, so the files can test the engine. ``kalaha`` is the example game of
seed 000 (docs/rules.md); every other preset gets a random game: uniform random legal moves from
``random.Random(seed)``, with ``seed`` the first from 0 whose game shows what is special
about the preset (see ``FEATURES``). Run from the repository root::

    python benchmarks/make_golden.py

A file holds the rules, the start, every step (player, legal moves, move, the flags of the
move and the position after it, in compact notation), the final score and the game in the
Finnish notation (canonical spelling; for ``kalaha`` also the article's own text). Steps
come last, one a line.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kalah_core import PRESETS, MoveResult, Position, Rules, Side
from kalah_core import reference as ref
from kalah_core.finnish import write_fi

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden"
SEED_000_GAME = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
MAX_SEED = 10_000

Step = dict[str, Any]


def play(rules: Rules, choose: Callable[[Position, list[ref.Move]], ref.Move]) -> list[Step]:
    """Play a game through the reference, each move picked by ``choose``."""
    position = Position.start(rules)
    steps: list[Step] = []
    while moves := ref.legal_moves(position, rules):
        move = choose(position, moves)
        after, extra, captured, over = ref.play(position, rules, move)
        steps.append(
            {
                "ply": len(steps) + 1,
                "player": position.to_move.value,
                "legal_moves": moves,
                "move": move,
                "extra_turn": extra,
                "captured": captured,
                "over": over,
                "position": after.compact(),
                # Not written: used by FEATURES only.
                "_before": position,
            }
        )
        position = after
    return steps


def seed_000_game(rules: Rules) -> list[Step]:
    """The example game of seed 000, read sowing by sowing (the side and the '*' checked)."""
    sowings = []
    for round_text in SEED_000_GAME.split(","):
        south, north = round_text.split("-")
        for side, turn in ((Side.SOUTH, south), (Side.NORTH, north)):
            sowings += [(side, int(m), star == "*") for m, star in re.findall(r"(\d)(\*?)", turn)]
    written = iter(sowings)

    def choose(position: Position, moves: list[ref.Move]) -> ref.Move:
        side, move, starred = next(written)
        assert position.to_move is side and move in moves, (position, side, move)
        if starred:
            assert ref.play(position, rules, move)[2] > 0, (position, move)
        return move

    steps = play(rules, choose)
    assert next(written, None) is None, "the game ended before its last sowing"
    return steps


def ends_with(changed: dict[str, Any]) -> Callable[[Rules, list[Step]], bool]:
    """The last move ends the game only thanks to the rule options it is played under, i.e.
    not under ``rules.replace(**changed)``."""

    def feature(rules: Rules, steps: list[Step]) -> bool:
        last = steps[-1]
        return not ref.play(last["_before"], rules.replace(**changed), last["move"])[3]

    return feature


FEATURES: dict[str, Callable[[Rules, list[Step]], bool]] = {
    # either-side-empty: the game ends with the player to move still holding seeds
    "kalah": ends_with({"end": "mover-empty"}),
    # majority: a store holds more than half the seeds while the player to move has seeds
    "kalah-ru": ends_with({"majority": False}),
    # empty capture: a last seed in an empty house facing an empty house goes to the store
    "piet-hein": lambda rules, steps: any(s["captured"] == 1 for s in steps),
    # pie: North swaps
    "kalah-pie": lambda rules, steps: any(s["move"] == "swap" for s in steps),
    # majority (KGP): a store holds more than half the seeds while both rows still hold seeds
    "kgp": ends_with({"majority": False}),
}


def random_game(name: str, rules: Rules) -> tuple[int, list[Step]]:
    for seed in range(MAX_SEED):
        rng = random.Random(seed)

        def choose(position: Position, moves: list[ref.Move], rng: random.Random = rng) -> ref.Move:
            return rng.choice(moves)

        steps = play(rules, choose)
        feature = FEATURES.get(name)
        if (
            any(s["captured"] for s in steps)
            and any(s["extra_turn"] for s in steps)
            and (feature is None or feature(rules, steps))
        ):
            return seed, steps
    raise SystemExit(f"{name}: no seed below {MAX_SEED} gives a game with its features")


def finnish(steps: list[Step]) -> str:
    """The game in the Finnish notation, written from the reference's results."""
    results = []
    for step in steps:
        before = step["_before"]
        after = Position.parse(step["position"])
        results.append(
            MoveResult(
                step["move"],
                before.to_move,
                before,
                after,
                step["extra_turn"],
                step["captured"],
                step["over"],
            )
        )
    return write_fi(results)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rules in PRESETS.items():
        data: dict[str, Any] = {"preset": name, "rules": rules.to_json()}
        if name == "kalaha":
            steps = seed_000_game(rules)
            data["source"] = "the example game of seed 000 (RULES.md), replayed by the reference"
            data["fi_source"] = SEED_000_GAME
        else:
            seed, steps = random_game(name, rules)
            data["source"] = (
                f"uniform random legal moves from random.Random({seed}), played by the "
                "reference (benchmarks/make_golden.py)"
            )
        final = Position.parse(steps[-1]["position"])
        assert ref.is_over(final, rules) and steps[-1]["over"]
        score = ref.final_score(final, rules)
        data["fi"] = finnish(steps)
        data["start"] = Position.start(rules).compact()
        data["final_score"] = list(score)
        data["winner"] = (
            None if score[0] == score[1] else "south" if score[0] > score[1] else "north"
        )
        rows = [json.dumps({k: v for k, v in s.items() if not k.startswith("_")}) for s in steps]
        # One step a line, so that a diff of two files reads like a diff of two games.
        head = json.dumps(data, indent=1)[: -len("\n}")]
        path = OUT / f"{name}.json"
        path.write_text(head + ',\n "steps": [\n  ' + ",\n  ".join(rows) + "\n ]\n}\n")
        print(f"{path}: {len(steps)} plies, score {score[0]}-{score[1]}; {data['fi']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
