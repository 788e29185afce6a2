"""What the machine gives the agent: its memory and cores (a container's limits first), and
the table and database sizes that follow from them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def memory_limit() -> int:
    """Bytes this process may use: the cgroup limit (a container's), else the machine's."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def cpu_limit() -> int:
    """Cores this process may use: its affinity, capped by a cgroup CPU quota."""
    cores = len(os.sched_getaffinity(0))
    with contextlib.suppress(OSError, ValueError):
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cores = min(cores, max(1, -(-int(quota) // int(period))))
    return max(1, cores)


def default_tt_mb(limit: int | None = None) -> int:
    """A quarter of the memory limit for the table, 16..1024 MB (256 MB in 1 GiB)."""
    limit = memory_limit() if limit is None else limit
    return int(min(max(limit // 4 // (1 << 20), 16), 1024))


def database_budget(limit: int | None = None) -> int:
    """The largest endgame database (bytes) the agent maps: a quarter of the memory limit."""
    return (memory_limit() if limit is None else limit) // 4
