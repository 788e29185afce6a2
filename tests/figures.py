"""Figures measured by this run, printed in pytest's summary: how many inputs each fuzzer
tried, and what the load and fault tests measured (requests/s, p99, faults survived)."""

from __future__ import annotations

from collections import Counter

TRIED: Counter[str] = Counter()
MEASURED: list[str] = []


def tried(target: str) -> None:
    TRIED[target] += 1


def measured(line: str) -> None:
    MEASURED.append(line)
