"""Issue 33's batch findings, each reproduced against a real server (gunicorn over HTTP), a real
``redis-server`` and real ``kalah worker`` processes:

- 33.2: an idle worker stopped listening (the store's 10 s socket timeout under RQ's 405 s
  blocking dequeue: RQ took it for a lost connection and backed off up to 60 s);
- 33.4: the state Redis at its ``maxmemory`` mid-job made the workers exit and left the job
  "running"; a new job got a 503 and was charged;
- 33.12: a job could not be cancelled (``DELETE`` was a 405);
- 33.14: ``GET /v1/jobs/{id}`` answered 500 when Redis timed out reading the results.

Issue 32's job cost rides along: a job's searches are charged to its owner as its chunks
finish, not reserved up front.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from figures import measured
from harness import Gunicorn, RedisServer, free_port
from test_batch_workers import endgame_positions, start_worker

from kalah_service.jobs.redis_jobs import WORKER_STALE_S
from kalah_service.jobs.redis_layout import FAIR_PREFIX, LEASES, JobKeys
from kalah_service.ratelimit.costs import ITEMS_PER_UNIT
from kalah_service.stores.redis_keys import RedisKeyStore

DEADLINE_S = 180.0


def wait_until(check: Callable[[], Any], what: str, log: Path | None = None) -> Any:
    """``check()``'s first true value, polled until a deadline of minutes."""
    deadline = time.monotonic() + DEADLINE_S
    while not (value := check()):
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log is not None else ""
            raise AssertionError(f"{what}: not within {DEADLINE_S:.0f} s\n{tail}")
        time.sleep(0.05)
    return value


def heavy_positions(count: int, seed: int = 21) -> list[dict[str, Any]]:
    """Boards with many seeds in the houses: a 100-300 ms search runs its whole budget."""
    out = []
    for item in endgame_positions(count * 40, seed=seed):
        board = item["position"]
        if sum(board["south"]) < 4 or sum(board["north"]) < 4:
            continue
        south = [h + 3 for h in board["south"]]
        north = [h + 3 for h in board["north"]]
        stores = list(board["stores"])
        for _ in range(36):
            stores[stores.index(max(stores))] -= 1
        if min(stores) < 0:
            continue
        out.append({"position": {**board, "south": south, "north": north, "stores": stores}})
        if len(out) == count:
            return out
    raise AssertionError("not enough positions")


@pytest.fixture
def server(own_redis: RedisServer) -> Iterator[tuple[str, RedisServer]]:
    """gunicorn on its own Redis: jobs in chunks of 4, every batch of 2 or more a job."""
    gunicorn = Gunicorn(
        {
            "KALAH_REDIS_URL": own_redis.url,
            "KALAH_BATCH_CHUNK": "4",
            "KALAH_BATCH_INLINE_MAX": "1",
            "KALAH_EGDB_PATH": "off",
        },
        workers=1,
    )
    try:
        yield gunicorn.start(), own_redis
    finally:
        gunicorn.close()


def new_key(redis_url: str, tier: str = "standard") -> tuple[dict[str, str], str]:
    """Headers with a new key of ``tier``, and its rate-limit identity."""
    key, info = RedisKeyStore(redis_url, timeout_s=2.0).create(tier)
    return {"Authorization": f"Bearer {key}"}, f"key:{info.id}"


def charged(states: redis.Redis, identity: str) -> int:
    """What ``identity``'s bucket holds in Redis (every worker's synced charges)."""
    return sum(int(states.get(key) or 0) for key in states.keys(f"kalah:rl:{identity}:*"))


def test_an_idle_worker_keeps_listening(server: tuple[str, RedisServer], tmp_path: Path) -> None:
    """33.2: idle for longer than the store's socket timeout, the worker still listens: no
    error in its log, and a job posted then is taken at once (before, a 40-item job waited
    out a reconnection back-off: ``benchmarks/bench_jobs.py`` (a))."""
    base, own_redis = server
    log = tmp_path / "worker.log"
    worker = start_worker(own_redis.url, log)
    try:
        idle_s = WORKER_STALE_S + 2  # the job store's socket timeout is 10 s
        time.sleep(idle_s)
        headers, _ = new_key(own_redis.url)
        body = {"positions": endgame_positions(40, seed=71), "limits": {"time_ms": 1000}}
        posted = requests.post(base + "/v1/batch", json=body, headers=headers, timeout=60)
        assert posted.status_code == 202, posted.text
        started = time.monotonic()
        url = base + posted.headers["Location"] + "?limit=1"
        wait_until(
            lambda: requests.get(url, headers=headers, timeout=60).json()["status"] == "finished",
            "the job finished",
            log,
        )
        waited = time.monotonic() - started
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(30)
    text = log.read_text(errors="replace")
    measured(f"idle worker ({idle_s:.0f} s), then a 40-item job: finished after {waited:.2f} s")
    assert "Timeout" not in text and "could not connect" not in text, text[-3000:]
    assert "unavailable" not in text, text[-3000:]


def test_a_full_state_store_neither_kills_a_worker_nor_charges_a_503(
    server: tuple[str, RedisServer], tmp_path: Path
) -> None:
    """33.4: the state Redis reaches its ``maxmemory`` mid-job (every write refused with
    OOM). The worker waits it out and finishes the job once memory is back; a job posted
    meanwhile is a 503 problem charged nothing (before: both workers exited, the job stayed
    "running" and a new job's 503 cost 81 units)."""
    base, own_redis = server
    states = redis.Redis.from_url(own_redis.url)
    headers, _ = new_key(own_redis.url)
    log = tmp_path / "worker.log"
    worker = start_worker(own_redis.url, log)
    try:
        body = {"positions": heavy_positions(40), "limits": {"time_ms": 150}}
        posted = requests.post(base + "/v1/batch", json=body, headers=headers, timeout=60)
        assert posted.status_code == 202, posted.text
        meta = JobKeys(posted.json()["id"]).meta
        wait_until(lambda: int(states.hget(meta, "done") or 0) >= 4, "a chunk finished", log)

        states.config_set("maxmemory", 1)  # full: every write is refused (noeviction)
        try:
            refused = requests.post(
                base + "/v1/batch",
                json={"positions": endgame_positions(8, seed=72)},
                headers=headers,
                timeout=60,
            )
            assert refused.status_code == 503, refused.text
            assert refused.headers["Content-Type"] == "application/problem+json"
            assert refused.headers["Kalah-Cost"] == "0" and "Retry-After" in refused.headers
            wait_until(lambda: "OutOfMemoryError" in log.read_text(), "the worker hit OOM", log)
            assert worker.poll() is None, "the worker survives a full store"
            status = requests.get(base + posted.headers["Location"], headers=headers, timeout=60)
            # Limits that cannot be counted are not lifted (docs/deploy.md, "Store faults").
            assert status.status_code == 503 and "Retry-After" in status.headers, status.text
        finally:
            states.config_set("maxmemory", 0)
        wait_until(lambda: states.hget(meta, "status") == b"finished", "the job finished", log)
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(30)
    measured(
        "state store at maxmemory mid-job: the worker waited (OutOfMemoryError logged) and "
        "finished the job; a new job meanwhile: 503, Kalah-Cost 0"
    )


def test_the_owner_cancels_a_job_and_its_searches_are_charged_as_they_run(
    server: tuple[str, RedisServer], tmp_path: Path
) -> None:
    """33.12: ``DELETE /v1/jobs/{id}`` cancels for the owner (anyone else: 404): the running
    chunk stops, nothing more is charged, the results so far stay readable (before: a 405).
    Issue 32: the job cost 1 unit per 100 items when posted, and each finished chunk's
    search was charged to the owner as it finished."""
    base, own_redis = server
    states = redis.Redis.from_url(own_redis.url)
    headers, identity = new_key(own_redis.url)
    other, _ = new_key(own_redis.url)
    log = tmp_path / "worker.log"
    worker = start_worker(own_redis.url, log)
    try:
        items = heavy_positions(40, seed=23)
        body = {"positions": items, "limits": {"time_ms": 300}}
        posted = requests.post(base + "/v1/batch", json=body, headers=headers, timeout=60)
        assert posted.status_code == 202, posted.text
        assert posted.headers["Kalah-Cost"] == str(1 + math.ceil(40 / ITEMS_PER_UNIT))
        job = posted.json()["id"]
        url = base + posted.headers["Location"]
        keys = JobKeys(job)
        after_post = wait_until(lambda: charged(states, identity), "the POST charged", log)
        wait_until(lambda: int(states.hget(keys.meta, "done") or 0) >= 4, "a chunk done", log)
        # The finished chunk's search is charged as it finished (4 searches of <= 300 ms).
        first = wait_until(
            lambda: charged(states, identity) > after_post and charged(states, identity),
            "the first chunk charged",
            log,
        )
        assert 1 <= first - after_post <= 4 * 3 + 1

        for who in (other, {}):
            assert requests.delete(url, headers=who, timeout=60).status_code == 404
        cancelled = requests.delete(url, headers=headers, timeout=60)
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        owner = states.hget(keys.meta, "owner").decode()
        wait_until(
            lambda: states.zcard(LEASES) == 0 and states.llen(FAIR_PREFIX + owner) == 0,
            "the running chunk stopped and the waiting ones were dropped",
            log,
        )
        spent = charged(states, identity)
        answered = states.hlen(keys.results)
        # Another key's job runs after it: the worker has looked at the queue again.
        done = requests.post(
            base + "/v1/batch",
            json={"positions": endgame_positions(6, seed=73)},
            headers=other,
            timeout=60,
        )
        assert done.status_code == 202
        other_url = base + done.headers["Location"]
        wait_until(
            lambda: (
                requests.get(other_url, headers=other, timeout=60).json()["status"] == "finished"
            ),
            "another job finished",
            log,
        )
        assert charged(states, identity) == spent, "nothing more charged after the cancel"
        assert states.hlen(keys.results) == answered, "nothing more run after the cancel"
        page = requests.get(url + "?limit=100", headers=headers, timeout=60).json()
        assert page["status"] == "cancelled"
        readable = [r for r in page["results"] if r is not None]
        assert 4 <= len(readable) < 40, "the results so far stay readable"
        again = requests.delete(url, headers=headers, timeout=60)
        assert again.status_code == 200 and again.json()["status"] == "cancelled"
    finally:
        worker.terminate()
        worker.wait(30)
    measured(
        f"DELETE of a running 40-item job: cancelled; {len(readable)} results readable, "
        f"{spent - after_post} search units charged for the chunks run"
    )


class SlowProxy:
    """A TCP proxy to Redis that holds any command naming ``word`` for ``delay_s`` while
    ``slow`` is set (a Redis that times out on that command)."""

    def __init__(self, target_port: int, word: bytes, delay_s: float) -> None:
        self.port = free_port()
        self.target_port = target_port
        self.word = word
        self.delay_s = delay_s
        self.slow = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, commands: bool) -> None:
        try:
            while data := source.recv(65536):
                if commands and self.slow.is_set() and self.word in data.upper():
                    time.sleep(self.delay_s)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def test_a_redis_timeout_reading_a_job_is_a_503(own_redis: RedisServer, tmp_path: Path) -> None:
    """33.14: Redis timing out on the results' ``HMGET`` made ``GET /v1/jobs/{id}`` a 500
    "an internal error occurred ()"; now a 503 problem with Retry-After, in JSON and NDJSON."""
    proxy = SlowProxy(own_redis.port, b"HMGET", delay_s=3.0)
    gunicorn = Gunicorn(
        {
            "KALAH_REDIS_URL": f"redis://127.0.0.1:{proxy.port}/0",
            "KALAH_REDIS_TIMEOUT_S": "0.5",
            "KALAH_BATCH_INLINE_MAX": "1",
            "KALAH_EGDB_PATH": "off",
        },
        workers=1,
    )
    log = tmp_path / "worker.log"
    worker = start_worker(own_redis.url, log)
    try:
        base = gunicorn.start()
        headers, _ = new_key(own_redis.url)
        body = {"positions": endgame_positions(6, seed=74), "limits": {"time_ms": 200}}
        posted = requests.post(base + "/v1/batch", json=body, headers=headers, timeout=60)
        assert posted.status_code == 202, posted.text
        url = base + posted.headers["Location"]
        wait_until(
            lambda: requests.get(url, headers=headers, timeout=60).json()["status"] == "finished",
            "the job finished",
            log,
        )
        proxy.slow.set()
        answers = [
            requests.get(url, headers={**headers, "Accept": accept}, timeout=60)
            for accept in ("application/json", "application/x-ndjson")
        ]
        proxy.slow.clear()
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert answer.headers["Content-Type"] == "application/problem+json"
            assert answer.headers["Retry-After"] == "5"
            assert answer.headers["Kalah-Cost"] == "0"
        assert requests.get(url, headers=headers, timeout=60).status_code == 200
    finally:
        worker.terminate()
        worker.wait(30)
        gunicorn.close()
        proxy.close()
    measured("Redis timing out on HMGET: GET /v1/jobs/{id} is a 503 with Retry-After: 5")


def test_with_no_worker_a_jobs_large_body_is_refused_unread(
    server: tuple[str, RedisServer],
) -> None:
    """33.13 with 33.1: no worker alive, a batch body above 64 KiB (only a job could be that
    large) is refused with a 503 before it is read: nothing is parsed for free, nothing is
    charged (before: accepted, 202, and charged its whole budget)."""
    base, own_redis = server
    headers, identity = new_key(own_redis.url)
    items = [{"position": "444444-0-444444-0-s", "limits": {"time_ms": 1000}}] * 10000
    body = json.dumps({"positions": items}).encode()
    refused = requests.post(
        base + "/v1/batch",
        data=body,
        headers={**headers, "Content-Type": "application/json"},
        timeout=120,
    )
    assert refused.status_code == 503, refused.text
    assert "no batch worker" in refused.json()["detail"]
    assert refused.headers["Kalah-Cost"] == "0" and refused.headers["Retry-After"] == "5"
    assert refused.headers["Connection"] == "close", "the body was not read"
    states = redis.Redis.from_url(own_redis.url)
    # The body's reservation is refunded (each server worker syncs its counts every 0.1 s).
    wait_until(lambda: charged(states, identity) == 0, "the reservation refunded")
