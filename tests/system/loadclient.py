"""A small load driver for the fault and flood tests: threads with keep-alive HTTP/1.1
connections from a chosen loopback source address, bounded by a deadline and a count."""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[int, bytes], bool]
"""Whether an answer (status, body) is right."""


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    body: Any = None
    check: Check | None = None


@dataclass
class Tally:
    """What a load run saw."""

    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    retries: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def count(self) -> int:
        return len(self.latencies)

    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else 0.0
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[int(q) - 1]

    def summary(self) -> str:
        return (
            f"{self.count} requests in {self.seconds:.1f} s ({self.rate():.0f}/s), "
            f"p50 {self.percentile(50) * 1000:.1f} ms, p99 {self.percentile(99) * 1000:.1f} ms, "
            f"statuses {dict(sorted(self.statuses.items()))}, retried {self.retries}, "
            f"failed {len(self.failures)}, wrong {len(self.wrong)}"
        )


class Client:
    """One keep-alive connection from ``source``; a connection the server closed (a worker
    recycled or killed) is reopened and the request sent once more, as any client does."""

    def __init__(self, port: int, source: str = "127.0.0.1") -> None:
        self.port = port
        self.source = source
        self.connection = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=30, source_address=(self.source, 0)
        )

    def request(self, call: Call, tally: Tally) -> None:
        body = None if call.body is None else json.dumps(call.body)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        started = time.perf_counter()
        for attempt in (1, 2):
            try:
                self.connection.request(call.method, call.path, body=body, headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                break
            except (OSError, http.client.HTTPException) as error:
                self.connection.close()
                self.connection = self._connect()
                if attempt == 2:
                    with tally.lock:
                        tally.failures.append(f"{call.path}: {error!r}")
                    return
                with tally.lock:
                    tally.retries += 1
        elapsed = time.perf_counter() - started
        right = call.check is None or response.status != 200 or call.check(response.status, data)
        with tally.lock:
            tally.latencies.append(elapsed)
            tally.statuses[response.status] += 1
            if not right:
                tally.wrong.append(_describe(call, data))

    def close(self) -> None:
        self.connection.close()


def run(
    port: int,
    calls: Sequence[Call],
    *,
    threads: int,
    seconds: float,
    source: str = "127.0.0.1",
    rate: float | None = None,
    max_requests: int = 1_000_000,
    until: threading.Event | None = None,
    tally: Tally | None = None,
) -> Tally:
    """Send ``calls`` round-robin from ``threads`` connections until ``seconds`` pass,
    ``max_requests`` are sent or ``until`` is set; ``rate`` (requests/s over all threads)
    paces them. ``tally`` lets another thread watch the answers come in."""
    tally = Tally() if tally is None else tally
    counter = iter(range(max_requests))
    lock = threading.Lock()
    started = time.perf_counter()
    deadline = started + seconds

    def worker() -> None:
        client = Client(port, source)
        try:
            while time.perf_counter() < deadline and not (until and until.is_set()):
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                if rate is not None:
                    due = started + n / rate
                    pause = due - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                client.request(calls[n % len(calls)], tally)
        finally:
            client.close()

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(seconds + 60)
    tally.seconds = time.perf_counter() - started
    return tally


def _describe(call: Call, data: bytes) -> str:
    """A wrong answer, briefly: the fields that say why (for analyses) or its start."""
    try:
        answer = json.loads(data)
        keys = ("cached", "value", "exact", "lower", "upper", "depth", "nodes", "time_ms", "limits")
        brief = {k: answer.get(k) for k in keys}
    except ValueError:
        return f"{call.path}: {data[:300]!r}"
    return f"{call.path}: expected {getattr(call.check, 'expected', '?')}, got {brief}"
