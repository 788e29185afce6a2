"""`kalah bench`'s node count fingerprints the search: a refactor or a speed-up of the same tree
leaves it unchanged. A commit that changes it on purpose updates BENCH_NODES and says why in its
message (HISTORY.md records the measurements)."""

from __future__ import annotations

from kalah_core.bench import run_bench

BENCH_NODES = 16_519_418  # since the table grows from 16 MiB to its 64 (search-11; was 16,357,418)


def test_bench_node_count_is_pinned() -> None:
    rows = run_bench()
    assert all(row.exact for row in rows)
    assert sum(row.nodes for row in rows) == BENCH_NODES
