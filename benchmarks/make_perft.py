"""Write tests/data/perft.json: perft counts from the start of every preset.

The counts come from the compiled engine (``kalah_core.perft``); the shallow ones are
cross-checked against the plain-Python reference (``kalah_core.reference``) before anything
is written. Run from the repository root::

    python benchmarks/make_perft.py            # the default depths below
    python benchmarks/make_perft.py --check-depth 6 --out /tmp/perft.json

``perft(d)`` is the number of move sequences (sowings or swaps) of exactly ``d`` moves from
the start; a game that ends sooner counts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kalah_core import PRESETS, Position, Rules, perft
from kalah_core import reference as ref

# The deepest depth per preset that the engine computes in a few seconds (measured: depth 12
# of `kalah` takes ~6 s at ~65 million sowings/s; `kalah-ru` and `piet-hein` branch more).
DEPTHS = {"kalah": 12, "kalaha": 12, "kalah-ru": 11, "piet-hein": 11, "kalah-pie": 12, "kgp": 10}
DEFAULT_DEPTH = 11  # for a preset added later
CHECK_DEPTH = 7  # reference cross-check up to here (~1-2 s per preset)
# Boards beyond the one-word board (more than 8 houses or 255 seeds), searched on the big
# board: KGP's largest, and boards whose houses lap the board many times over.
BOARDS = {
    "kgp-12x12": (Rules.preset("kgp", houses=12, seeds=12), 7),
    "kgp-10x24": (Rules.preset("kgp", houses=10, seeds=24), 7),
    "kalah-6x24": (Rules.preset("kalah", seeds=24), 9),
    "piet-hein-12x3": (Rules.preset("piet-hein", houses=12, seeds=3), 8),
}
BOARD_CHECK_DEPTH = 4  # the reference on these boards: ~1-2 s each
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "perft.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check-depth", type=int, default=CHECK_DEPTH)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    data: dict[str, object] = {
        "description": "perft(d) from the start of each preset, d = 1..len(perft): the number of "
        "move sequences (sowings or swaps) of exactly d moves; a game that ends sooner counts "
        "nothing. Written by benchmarks/make_perft.py. `boards`: the same from the start of "
        "boards beyond 8 houses or 255 seeds.",
        "presets": {},
    }
    presets: dict[str, object] = {}
    for name, rules in PRESETS.items():
        start = Position.start(rules)
        counts = []
        for depth in range(1, DEPTHS.get(name, DEFAULT_DEPTH) + 1):
            began = time.perf_counter()
            count = perft(start, rules, depth)
            seconds = time.perf_counter() - began
            if depth <= args.check_depth:
                expected = ref.perft(start, rules, depth)
                if count != expected:
                    print(f"{name} depth {depth}: engine {count} != reference {expected}")
                    return 1
            counts.append(count)
            checked = " (= reference)" if depth <= args.check_depth else ""
            print(f"{name:10} {depth:3} {count:15,} {seconds:8.3f} s{checked}", flush=True)
        presets[name] = {"rules": rules.to_json(), "start": start.compact(), "perft": counts}
    data["presets"] = presets
    boards: dict[str, object] = {}
    for name, (rules, last) in BOARDS.items():
        start = Position.start(rules)
        counts = []
        for depth in range(1, last + 1):
            began = time.perf_counter()
            count = perft(start, rules, depth)
            seconds = time.perf_counter() - began
            if depth <= min(args.check_depth, BOARD_CHECK_DEPTH):
                expected = ref.perft(start, rules, depth)
                if count != expected:
                    print(f"{name} depth {depth}: engine {count} != reference {expected}")
                    return 1
            counts.append(count)
            print(f"{name:14} {depth:3} {count:15,} {seconds:8.3f} s", flush=True)
        boards[name] = {"rules": rules.to_json(), "start": start.compact(), "perft": counts}
    data["boards"] = boards
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
