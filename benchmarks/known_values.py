"""Kalah(m,n) from the start against the published values (KNOWN_VALUES.md).

Prints, for m = 1..6 and n = 1..6 under the paper's rules (capture=always,
end=either-side-empty) and under the standard `kalah` rules, the value with time and nodes
next to the published value, and flags any mismatch. Cells that do not finish within the
budget are reported as bounds.

    python benchmarks/known_values.py [--budget-s 20] [--tt-mb 512] [--max-houses 6]
"""

from __future__ import annotations

import argparse
import sys

from kalah_core import Position, Rules
from kalah_core.solver import Engine

# Irving, Donkers & Uiterwijk (2000), capture=always, end=either-side-empty.
PAPER: dict[tuple[int, int], int] = {
    (1, 1): 0, (1, 2): -2, (1, 3): 6, (1, 4): -2, (1, 5): 2, (1, 6): 0,
    (2, 1): 2, (2, 2): -2, (2, 3): -2, (2, 4): -12, (2, 5): 6, (2, 6): 8,
    (3, 1): 0, (3, 2): 4, (3, 3): 2, (3, 4): 2, (3, 5): 6, (3, 6): -10,
    (4, 1): 2, (4, 2): 6, (4, 3): 8, (4, 4): 2, (4, 5): 2, (4, 6): 0,
    (5, 1): 0, (5, 2): 0, (5, 3): 8, (5, 4): 12, (5, 5): 2, (5, 6): 2,
    (6, 1): 2, (6, 2): 10, (6, 3): 2, (6, 4): 10, (6, 5): 12, (6, 6): 2,
}  # fmt: skip
# Rawlings (2015) and seed 002, standard rules (capture=nonempty).
STANDARD: dict[tuple[int, int], int] = {(6, 3): 2, (6, 4): 8, (6, 5): 10}

RULE_SETS = {
    "paper (capture=always)": (Rules(capture="always"), PAPER),
    "kalah (standard)": (Rules(), STANDARD),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget-s", type=float, default=20.0, help="time budget per cell")
    parser.add_argument("--tt-mb", type=int, default=512)
    parser.add_argument("--max-houses", type=int, default=6)
    args = parser.parse_args(argv)
    engine = Engine(args.tt_mb)
    mismatches = 0
    for title, (base, published) in RULE_SETS.items():
        print(f"\n{title}")
        print(
            f"{'m':>2} {'n':>2} {'value':>9} {'published':>9} {'time_s':>8} {'nodes':>12}  status"
        )
        for m in range(1, args.max_houses + 1):
            for n in range(1, 7):
                rules = base.replace(houses=m, seeds=n)
                engine.clear()
                a = engine.analyse(
                    Position.start(rules), rules, time_ms=args.budget_s * 1000, prove="value"
                )
                known = published.get((m, n))
                if a.exact:
                    shown = f"{a.value:+d}"
                    status = "-" if known is None else ("ok" if a.value == known else "MISMATCH")
                else:
                    shown = f"[{a.lower:+d},{a.upper:+d}]"
                    status = "unfinished"
                    if known is not None and not a.lower <= known <= a.upper:
                        status = "MISMATCH"
                mismatches += status == "MISMATCH"
                pub = "" if known is None else f"{known:+d}"
                print(
                    f"{m:>2} {n:>2} {shown:>9} {pub:>9} {a.time_ms / 1000:>8.2f} "
                    f"{a.nodes:>12,}  {status}",
                    flush=True,
                )
    print(f"\nmismatches: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
