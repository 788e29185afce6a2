"""Where every worker's charges are counted: one counter per caller and window, shared by
every process that serves the caller.

:class:`Counters` is the interface: :meth:`Counters.add` adds units to some windows at once
and reads back their totals and the time left in each (a window's counter starts at 0 and
expires at the window's end). Two backends:

- :class:`~.redis_counters.RedisCounters`, in the state store (shared by every worker and
  replica);
- :class:`~.embedded_counters.EmbeddedCounters`, a SQLite file beside the embedded answer store
  (shared by every process of the machine: gunicorn's workers, and a worker respawned after a crash,
  which finds its callers' buckets as they were).

A backend that fails (Redis down or answering errors, a full disk, a corrupt file) raises one
of its :attr:`Counters.errors`; :mod:`kalah_service.ratelimit.buckets` then refuses limited requests
with a 503 until the counters answer again (docs/deploy.md, "Store faults").
"""

from __future__ import annotations

from collections.abc import Sequence

KEY_PREFIX = "kalah:rl"

Window = tuple[str, int, int]
"""(key, units to add, the window's length in seconds)."""

Limit = tuple[str, int, int]
"""(key, the window's length in seconds, the most its total may reach)."""

Totals = list[tuple[int, float]]
"""Each window's (total, seconds until it ends), in order."""


class Counters:
    """The interface of the shared counters."""

    errors: tuple[type[BaseException], ...] = ()
    """What the backend raises when it fails (limited requests are then refused, a 503)."""

    def probe(self) -> None:
        """Write to the counters (``/readyz``): raises one of :attr:`errors` when that fails."""
        raise NotImplementedError

    def add(self, windows: Sequence[Window]) -> Totals:
        """Add each window's units (a negative number takes units back) and return each
        window's total and the time left in it."""
        raise NotImplementedError

    def reserve(self, limits: Sequence[Limit], units: int) -> tuple[int | None, Totals]:
        """Add ``units`` to every window at once if each total stays within its limit, else
        to none: (the index of the first window that cannot hold them or None, the totals
        after). Atomic: no other worker ever sees units that are then taken back."""
        raise NotImplementedError
