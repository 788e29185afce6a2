"""Finding 11: a retry after a killed worker waited out the dead worker's compute-once lock
(10.2 s for a 5 s budget). Over real HTTP (gunicorn, 2 workers), on both answer stores: the
worker searching a key is killed with SIGKILL, and the client's retry of the same request takes
the dead worker's lock over at once (the lock names its dead holder), even with ten minutes
left on its lease. No assertion on seconds: the retry's time is reported, not judged."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import diskcache
import pytest
import redis
import requests
from figures import measured
from harness import Gunicorn, RedisServer
from test_batch_workers import endgame_positions

from kalah_service.stores.lease import holder_dead, owner_token

BUDGET_MS = 3000


def heavy_position(seed: int) -> dict[str, object]:
    """An endgame with 56-64 more seeds: no search proves it within the budget."""
    position = endgame_positions(1, seed=seed)[0]["position"]
    return {**position, "south": [c + 8 for c in position["south"]]}


LONG_LEASE_S = 600
"""The dead holder's lease as the test stretches it (the service's is LEASE_S): a retry that
waited for it to lapse, or for its own wait to run out, would leave the lock in place."""


class Locks:
    """The compute-once locks held in a store: list them, or stretch one's lease."""

    def __init__(
        self,
        name: str,
        held: Callable[[], list[tuple[str, bytes]]],
        stretch: Callable[[str, bytes], None],
    ) -> None:
        self.name, self.held, self.stretch = name, held, stretch


@pytest.fixture(params=["redis", "embedded"])
def store(
    request: pytest.FixtureRequest, redis_server: RedisServer, tmp_path: Path
) -> Iterator[tuple[dict[str, str], Locks]]:
    """The server's environment and the locks of its store."""
    if request.param == "redis":
        redis_server.flush()
        client = redis.Redis.from_url(redis_server.url)

        def redis_locks() -> list[tuple[str, bytes]]:
            return [(k.decode(), v) for k in client.keys("kalah:v1:*:lock") if (v := client.get(k))]

        def redis_stretch(key: str, value: bytes) -> None:
            client.set(key, value, px=LONG_LEASE_S * 1000)

        yield {"KALAH_REDIS_URL": redis_server.url}, Locks("redis", redis_locks, redis_stretch)
    else:
        folder = tmp_path / "answers"
        folder.mkdir()

        def embedded_locks() -> list[tuple[str, bytes]]:
            with diskcache.Cache(str(folder)) as cache:
                return [
                    (str(k), str(cache.get(k)).encode()) for k in cache if str(k).endswith(":lock")
                ]

        def embedded_stretch(key: str, value: bytes) -> None:
            with diskcache.Cache(str(folder)) as cache:
                cache.set(key, value.decode(), expire=LONG_LEASE_S)

        env = {"KALAH_REDIS_URL": "", "KALAH_CACHE_DIR": str(folder)}
        yield env, Locks("embedded", embedded_locks, embedded_stretch)


def test_a_retry_after_the_searching_worker_is_killed_is_not_held_by_its_lock(
    store: tuple[dict[str, str], Locks],
) -> None:
    env, locks = store
    server = Gunicorn({**env, "KALAH_EGDB_PATH": "off"})
    base = server.start()
    body = {"position": heavy_position(41), "limits": {"time_ms": BUDGET_MS}}
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(requests.post, base + "/v1/analysis", json=body, timeout=300)
            while not (held := locks.held()):
                time.sleep(0.02)
            lock, token = held[0]
            holder = int(token.decode().split(":")[-2])
            time.sleep(0.5)  # into its search (the lock is taken just before it)
            os.kill(holder, signal.SIGKILL)
            with pytest.raises(requests.ConnectionError):
                first.result()
        # Seen dead within moments (the client's connection closes as the process exits,
        # a little before it is a zombie; tearing down its tables takes longer on a busy
        # machine); waiters check at every poll.
        while not holder_dead(token):
            time.sleep(0.01)
        # The dead holder's lock with far more lease left than any wait: only the liveness
        # check can free it before the retry has answered.
        locks.stretch(lock, token)
        started = time.perf_counter()
        retry = requests.post(base + "/v1/analysis", json=body, timeout=300)
        waited = time.perf_counter() - started
        left = locks.held()
    finally:
        server.close()
    measured(
        f"retry after the searching worker was killed ({locks.name}): "
        f"{retry.status_code} in {waited:.2f} s for a {BUDGET_MS / 1000:.0f} s budget"
    )
    assert retry.status_code == 200 and retry.json()["cached"] is False
    # The retry took the dead holder's lock over (and released its own when done). Before,
    # it waited out the dead lock's lease (budget + 2 s), or, with a short renewed lease and
    # no liveness check, waited for the lease's rest or its own wait to run out, then
    # searched without the lock: the dead holder's token would still be there.
    assert (lock, token) not in left, f"the dead holder's lock is still held: {left}"


def test_a_holder_is_dead_only_if_its_process_on_this_machine_is_gone() -> None:
    machine = owner_token().rsplit(":", 2)[0]
    zombie = subprocess.Popen(["true"])
    while Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.01)
    assert holder_dead(f"{machine}:{zombie.pid}:abc")  # exited, not yet reaped
    zombie.wait()
    assert holder_dead(f"{machine}:{zombie.pid}:abc")  # reaped
    assert not holder_dead(owner_token())  # this process
    assert not holder_dead("elsewhere/1:1:abc")  # another machine: its lease decides
    assert not holder_dead(b"dead-worker")
    assert not holder_dead(None)
