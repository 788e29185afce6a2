"""Fault and load tests against a real gunicorn and a real Redis on loopback, bounded to
seconds: Redis restarted, workers recycled and one killed, all under load; a flood from one
client limited while another is served as before. Figures go to the pytest summary."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import requests
from figures import measured
from loadclient import Call, Tally, run

from kalah_core import Position, Rules, legal_moves, play
from kalah_core.solver import Engine

if TYPE_CHECKING:
    from harness import Gunicorn, RedisServer

RULES = Rules(houses=4, seeds=3)


def sample_positions(count: int, seed: int = 7) -> dict[str, int]:
    """``count`` distinct positions of Kalah(4,3) reached by random play, with their exact
    values (solved here, in-process: the oracle the served answers are checked against)."""
    rng = random.Random(seed)
    engine = Engine(tt_mb=8)
    found: dict[str, int] = {}
    while len(found) < count:
        position = Position.start(RULES)
        for _ in range(rng.randrange(0, 12)):
            moves = legal_moves(position, RULES)
            if not moves:
                break
            position = play(position, RULES, rng.choice(moves)).after
        if position.compact() in found or not legal_moves(position, RULES):
            continue
        analysis = engine.analyse(position, RULES, time_ms=5000)
        assert analysis.exact
        found[position.compact()] = analysis.value
    return found


UNPROVEN: list[str] = []
"""Answers that ran out of budget (not exact): right only if their proven bounds hold the
true value. Under CPU contention a search can be starved (see the report of issue 7)."""


def analysis_call(position: str, value: int) -> Call:
    def check(status: int, body: bytes) -> bool:
        answer = json.loads(body)
        if answer["exact"]:
            return bool(answer["value"] == value)
        UNPROVEN.append(position)
        return bool(answer["lower"] <= value <= answer["upper"])

    check.expected = value  # type: ignore[attr-defined]

    return Call("GET", f"/v1/analysis?position={position}&houses=4&seeds=3", check=check)


def play_call() -> Call:
    def check(status: int, body: bytes) -> bool:
        return bool(json.loads(body)["position"] == "440555-1-444444-0-s")

    return Call("POST", "/v1/play", {"moves": [3]}, check)


@pytest.fixture
def server_factory() -> Iterator[type[Gunicorn]]:
    from harness import Gunicorn

    started: list[Gunicorn] = []

    class Tracked(Gunicorn):
        def __init__(self, env: dict[str, str]) -> None:
            super().__init__(env)
            started.append(self)

    yield Tracked
    for server in started:
        server.close()


def test_redis_restart_worker_recycling_and_a_killed_worker_under_load(
    own_redis: RedisServer, server_factory: type[Gunicorn]
) -> None:
    expected = sample_positions(120)
    UNPROVEN.clear()
    server = server_factory(
        {
            "KALAH_REDIS_URL": own_redis.url,
            "KALAH_MAX_REQUESTS": "200",  # recycled several times during the run
            "KALAH_MAX_REQUESTS_JITTER": "50",
        }
    )
    base = server.start()
    first_workers = server.worker_pids()
    calls = [analysis_call(p, v) for p, v in expected.items()]
    calls += [play_call(), Call("GET", "/v1/rules")]
    random.Random(1).shuffle(calls)

    readiness: list[tuple[float, int]] = []
    events: list[str] = []
    done, load_over = threading.Event(), threading.Event()
    tally = Tally()

    def answered(more: int) -> None:
        """Wait until ``more`` further answers came in, or the load has ended."""
        target = tally.count + more
        while tally.count < target and not load_over.is_set():
            time.sleep(0.05)

    def faults() -> None:
        answered(100)
        own_redis.stop()
        events.append("redis stopped")
        outage_end = time.monotonic() + 2.0
        while time.monotonic() < outage_end:
            readiness.append(
                (time.monotonic(), requests.get(base + "/readyz", timeout=5).status_code)
            )
            time.sleep(0.2)
        own_redis.start()
        events.append("redis started")
        answered(100)
        victim = min(server.worker_pids())
        os.kill(victim, signal.SIGKILL)
        events.append(f"worker {victim} killed")
        # Load until a worker has been recycled and well after the kill: counted in answers,
        # not seconds, so a slow machine runs longer instead of failing (pytest-timeout guards
        # against a hang; the assertions below say what was missing).
        while "Autorestarting worker" not in server.log.read_text(errors="replace"):
            if load_over.is_set():
                break
            answered(20)
        answered(100)
        events.append(f"{tally.count} answered")
        done.set()

    injector = threading.Thread(target=faults, daemon=True)
    injector.start()
    run(server.port, calls, threads=4, seconds=600, until=done, tally=tally)
    load_over.set()
    injector.join()
    assert done.is_set(), events

    # Ready again by itself once Redis is back (and the killed worker replaced); how long it
    # takes is not judged here (pytest-timeout ends a service that never gets ready).
    while requests.get(base + "/readyz", timeout=5).status_code != 200:
        time.sleep(0.2)
    # And limited requests are served again by every worker (each retries its counters).
    served = 0
    while served < 20:
        served = served + 1 if requests.get(base + "/v1/rules", timeout=5).ok else 0
    log = server.log.read_text(errors="replace")
    recycled = log.count("Autorestarting worker")
    replaced = len(server.worker_pids() - first_workers)

    measured(f"redis restart + recycling + kill -9 under load: {tally.summary()}")
    measured(
        f"  /readyz during the 2 s outage: {sorted({s for _, s in readiness})}; "
        f"workers recycled {recycled}, workers replaced {replaced}; "
        f"{len(UNPROVEN)} answers not proven within the 1 s budget (bounds checked); "
        f"events {events}"
    )
    assert tally.failures == [], tally.failures[:5]
    assert tally.wrong == [], tally.wrong[:5]
    # While Redis is down the rate limits (kept there) cannot be counted: a limited request is
    # then a 503 with Retry-After (docs/deploy.md, "Store faults"), never a 500.
    assert set(tally.statuses) <= {200, 503}, tally.statuses
    assert tally.count > 300  # 100 before the outage, 100 after it, 100 after the kill
    assert 503 in {s for _, s in readiness}
    assert recycled >= 1 and replaced >= 2


def test_a_flood_from_one_client_is_limited_without_slowing_the_others(
    redis_server: RedisServer, server_factory: type[Gunicorn]
) -> None:
    redis_server.flush()
    server = server_factory(
        {"KALAH_REDIS_URL": redis_server.url, "KALAH_LIMIT_ANONYMOUS": "100/hour"}
    )
    server.start()
    expected = sample_positions(20, seed=11)
    calls = [analysis_call(p, v) for p, v in expected.items()]
    # Warm the cache from other addresses, so both clients ask for cached answers; 5 each:
    # a search reserves its 1 s budget's 11 units, and 5 fit in a bucket of 100.
    for i in range(0, len(calls), 5):
        warm = calls[i : i + 5]
        source = f"127.0.0.{30 + i // 5}"
        tally = run(server.port, warm, threads=1, seconds=20, source=source, max_requests=5)
        assert set(tally.statuses) == {200}

    baseline = run(
        server.port, calls, threads=1, seconds=10, source="127.0.0.2", rate=20, max_requests=40
    )
    # The flood lasts until the other client is done and it has sent 1,200 requests, however
    # fast or slow the machine: counted, not timed (the bucket of 100 an hour cannot refill).
    flooded, stop = Tally(), threading.Event()

    def flooder() -> None:
        run(
            server.port,
            calls,
            threads=6,
            seconds=600,
            source="127.0.0.9",
            until=stop,
            tally=flooded,
        )

    thread = threading.Thread(target=flooder, daemon=True)
    thread.start()
    while flooded.count < 50 and thread.is_alive():  # the flood is under way
        time.sleep(0.05)
    during = run(
        server.port, calls, threads=1, seconds=60, source="127.0.0.2", rate=20, max_requests=40
    )
    while flooded.count < 1200 and thread.is_alive():
        time.sleep(0.05)
    stop.set()
    thread.join()  # its requests end with their answers (or their own 30 s socket timeout)

    measured(f"flood, the flooder (127.0.0.9, 6 connections): {flooded.summary()}")
    measured(f"flood, another client alone (127.0.0.2, 20/s): {baseline.summary()}")
    measured(f"flood, that client during the flood:        {during.summary()}")
    # Its bucket: 100 units, 1 per cached answer; admission and deduction are two steps, so
    # requests admitted together may overdraw it by as many as were in flight.
    assert flooded.count >= 1200
    assert flooded.statuses[200] <= 100 + 6
    assert flooded.statuses[429] >= 10 * flooded.statuses[200]
    assert set(flooded.statuses) == {200, 429}
    assert set(baseline.statuses) == {200} and set(during.statuses) == {200}
    assert during.wrong == [] and during.failures == []
    # Its latencies alone and during the flood are reported in the run's figures, not judged
    # here: the cores are shared with the flooder and whatever else runs (a benchmark's job).


def stalled_client(port: int) -> socket.socket:
    """A client that sends its headers and the first byte of a 100-byte body, then nothing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        b"POST /v1/play HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    return sock


def test_stalled_clients_lose_their_threads(server_factory: type[Gunicorn]) -> None:
    server = server_factory(
        {"KALAH_REDIS_URL": "", "KALAH_THREADS": "2", "KALAH_CLIENT_TIMEOUT_S": "1"}
    )
    base = server.start()
    stalled = [stalled_client(server.port) for _ in range(6)]  # more than the 4 threads
    try:
        time.sleep(0.3)
        started = time.perf_counter()
        # The threads come back after 1 s of silence, not never: with a deadline of minutes.
        answer = requests.get(base + "/v1/rules", timeout=120, headers={"Connection": "close"})
        waited = time.perf_counter() - started
        assert answer.status_code == 200
        for sock in stalled:
            data = b""
            while b"request-timeout" not in data and len(data) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
            assert data.startswith(b"HTTP/1.1 408"), data[:100]
            assert b"/problems/request-timeout" in data
        assert requests.get(base + "/v1/rules", timeout=120).status_code == 200
        measured(
            f"6 stalled clients on 4 threads (KALAH_CLIENT_TIMEOUT_S=1): another client "
            f"answered after {waited:.2f} s; each stalled one got a 408"
        )
    finally:
        for sock in stalled:
            sock.close()
