"""Compute-once locks that a dead holder cannot keep: who holds them, and a short renewed lease.

The answer stores (:class:`kalah_service.stores.answers.AnswerStore`: Redis and the embedded one)
let one request compute an uncached key while the others wait for its answer. The lock names its
holder (:func:`owner_token`: host, PID namespace and process id) and has a short lease
(:data:`LEASE_S`) that the holder renews (:func:`renewing`) while its search runs, so:

- a holder killed on this machine (a gunicorn worker taken by SIGKILL, the OOM killer) is
  seen dead at the waiter's next poll (:func:`holder_dead`), and its lock is taken over at
  once;
- a holder that died elsewhere (another replica) or cannot be checked stops renewing, and its
  lock lapses within :data:`LEASE_S`, whatever the search budget.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

log = logging.getLogger(__name__)

LEASE_S = 2.0
"""A lock's lease: how long a holder that stopped renewing (dead) can keep others waiting."""

RENEW_S = 0.5
"""How often the holder renews: a quarter of the lease, so a late beat on a busy machine
(the renewing thread needs the GIL for a moment) does not let a live lock lapse."""


@cache
def _machine() -> str:
    """This host and PID namespace: process ids are comparable only within one."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname()}/{namespace}"


def owner_token() -> str:
    """A fresh lock value naming this process: ``<host>/<pid namespace>:<pid>:<random>``."""
    return f"{_machine()}:{os.getpid()}:{secrets.token_hex(6)}"


def holder_dead(token: bytes | str | None) -> bool:
    """Whether the lock value names a process of this machine that no longer exists (a value
    from elsewhere, or not ours, is never judged dead: its lease decides)."""
    if token is None:
        return False
    text = token.decode(errors="replace") if isinstance(token, bytes) else token
    parts = text.rsplit(":", 2)  # machine, pid, random
    if len(parts) != 3 or parts[0] != _machine() or not parts[1].isdigit():
        return False
    pid = parts[1]
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        return False
    return _zombie(int(pid))


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but is not reaped yet (a killed gunicorn worker until the
    arbiter collects it): it still answers signals, but it holds nothing."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):  # no /proc (not Linux), or gone meanwhile
        return False
    return state in ("Z", "X")


@contextmanager
def renewing(renew: Callable[[], object], what: str, every: float = RENEW_S) -> Iterator[None]:
    """Call ``renew`` every ``every`` seconds in a thread while the block runs (a failed
    renewal is logged; the next one tries again)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            try:
                renew()
            except Exception as error:  # the store is down: the waiters compute themselves
                log.warning("renewing the lease of %s failed: %s", what, error)

    thread = threading.Thread(target=beat, name="lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
