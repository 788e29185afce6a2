"""How many inputs the fuzzers tried in this run, by target: printed in pytest's summary."""

from __future__ import annotations

from collections import Counter

TRIED: Counter[str] = Counter()


def tried(target: str) -> None:
    TRIED[target] += 1
