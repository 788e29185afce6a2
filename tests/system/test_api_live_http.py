"""Live analysis (issue 50, deliver 1) over real HTTP: a real gunicorn (its gthread workers, the
shipped configuration) and the shipped nginx in front of it. Events arrive in order, the last
is the answer the one-shot request then gets from the store, and 20 streams dropped by their
clients leave no engine searching (``kalah_engines_busy`` in ``/metrics``)."""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from harness import Gunicorn, wait_for
from test_nginx_proxy import Nginx

SEARCHED = "/v1/analysis?rules=kalah&seeds=5&position=start&time_ms=20000&nodes=1500000"
HOUR = "/v1/analysis?rules=piet-hein&position=start&time_ms=3600000"
NDJSON = {"Accept": "application/x-ndjson"}


@pytest.fixture(scope="module")
def server() -> Iterator[Gunicorn]:
    gunicorn = Gunicorn(
        {
            "KALAH_REDIS_URL": "",
            "KALAH_EGDB_PATH": "off",
            "KALAH_MAX_TIME_MS": "20000",
            "KALAH_STREAM_MAX_TIME_MS": "3600000",
            "KALAH_ENGINES": "24",  # 20 streams at once, each with its own engine
            "KALAH_THREADS": "48",
            "KALAH_TT_MB": "8",
        },
        workers=1,
    )
    gunicorn.start()
    try:
        yield gunicorn
    finally:
        gunicorn.close()


def busy(base: str) -> int:
    """Engines searching, summed over the workers (``/metrics``)."""
    text = requests.get(base + "/metrics", timeout=10).text
    found = re.findall(r"^kalah_engines_busy(?:\{[^}]*\})? (\S+)$", text, re.MULTILINE)
    return int(sum(float(v) for v in found))


class Stream:
    """A live analysis read line by line over its own connection, dropped at will."""

    def __init__(self, port: int, path: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.connection.request("GET", path, headers=NDJSON)
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        assert self.response.getheader("Content-Type") == "application/x-ndjson"

    def event(self) -> dict[str, Any]:
        while True:
            line = self.response.readline()
            assert line, "the stream ended"
            if line.strip():  # a blank line is a heartbeat
                result: dict[str, Any] = json.loads(line)
                return result

    def drop(self) -> None:
        assert self.connection.sock is not None
        self.connection.sock.close()
        self.connection.close()


def test_events_arrive_in_order_and_the_last_is_the_stored_answer(server: Gunicorn) -> None:
    stream = Stream(server.port, SEARCHED)
    events = [stream.event()]
    while not events[-1]["final"]:
        events.append(stream.event())
    *progress, final = events
    assert progress, "the search showed nothing before its answer"
    depths = [e["depth"] for e in progress]
    assert depths == sorted(depths) and depths[-1] > depths[0]
    stream.drop()
    # The one-shot request for the same limits: the answer the stream stored, byte for byte
    # (but its cached flag).
    one_shot = requests.get(server.base + SEARCHED, timeout=60)
    assert one_shot.status_code == 200 and one_shot.json()["cached"] is True
    assert final["answer"]["cached"] is False
    streamed = json.dumps(final["answer"], separators=(",", ":")).encode()
    assert one_shot.content.replace(b'"cached":true', b'"cached":false', 1) == streamed


@pytest.mark.timeout(300)  # a search not stopped would run an hour
def test_twenty_dropped_streams_leave_no_engine_searching(server: Gunicorn) -> None:
    wait_for(lambda: busy(server.base) == 0, 60, "an idle server")
    streams = [Stream(server.port, HOUR) for _ in range(20)]
    for stream in streams:
        assert stream.event()["final"] is False  # its search runs
    assert busy(server.base) == 20
    dropped = time.perf_counter()
    for stream in streams:
        stream.drop()
    wait_for(lambda: busy(server.base) == 0, 120, "the dropped streams' engines")
    print(f"20 streams dropped: no engine busy {time.perf_counter() - dropped:.3f} s later")
    # The worker still answers (no thread was left holding a search).
    assert requests.get(server.base + "/livez", timeout=10).status_code == 200


@pytest.mark.timeout(300)
def test_a_stream_passes_the_shipped_nginx_unbuffered(server: Gunicorn) -> None:
    """The first event comes through nginx while its search runs: the search is held open
    (an hour) until the client has read it, and it is still running then."""
    nginx = Nginx(server.port)
    try:
        wait_for(lambda: busy(server.base) == 0, 60, "an idle server")
        stream = Stream(nginx.port, HOUR)
        assert stream.response.getheader("X-Accel-Buffering") is None  # nginx's own header
        first = stream.event()
        assert first["final"] is False
        # The event came through while its search runs: nginx did not hold it back.
        assert busy(server.base) == 1
        stream.drop()
        # nginx closes its upstream connection when its client goes away: the search stops.
        wait_for(lambda: busy(server.base) == 0, 120, "the dropped stream's engine")
    finally:
        nginx.close()
