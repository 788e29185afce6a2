"""`kalah bench`'s node count fingerprints the search: a refactor or a speed-up of the same tree
leaves it unchanged. A commit that changes it on purpose updates BENCH_NODES and says why in its
message (HISTORY.md records the measurements)."""

from __future__ import annotations

from kalah_core.bench import run_bench

BENCH_NODES = 16_357_418  # since MTD(f) starts at the estimate (GUESS_BIAS 0, was 2)


def test_bench_node_count_is_pinned() -> None:
    rows = run_bench()
    assert all(row.exact for row in rows)
    assert sum(row.nodes for row in rows) == BENCH_NODES
