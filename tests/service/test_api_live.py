"""Live analysis (issue 50, deliver 1): ``/v1/analysis`` asked for ``text/event-stream`` or
``application/x-ndjson`` streams an event per deepening or narrowed bound, then the one-shot
answer; a dropped stream stops its search; the caller pays the time it ran. Through the test
client here; through gunicorn and nginx in test_api_live_http.py."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from kalah_service import create_app

NDJSON = {"Accept": "application/x-ndjson"}
SSE = {"Accept": "text/event-stream"}

# Kalah(6,5), no book: a search, cut by its node budget long before its time.
SEARCHED = {"rules": "kalah", "seeds": 5, "position": "start", "time_ms": 20000, "nodes": 1_500_000}
BOOKED = "/v1/analysis?rules=piet-hein&position=start&time_ms=20000&nodes=1500000"
"""Beyond the deep book's budgets (10 s) on a position it holds."""
QUERY = "/v1/analysis?" + "&".join(f"{k}={v}" for k, v in SEARCHED.items())
LONG = "/v1/analysis?rules=piet-hein&position=start&time_ms=60000"
HOUR = "/v1/analysis?rules=piet-hein&position=start&time_ms=3600000"
"""A search that would run an hour: a stream that does not stop it hangs (pytest-timeout)."""
SMALL = "/v1/analysis?rules=kalah&houses=3&seeds=3&position=start"


def make_app(tmp_path: Path, name: str, **config: Any) -> Flask:
    return create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": "",
            "KALAH_MAX_TIME_MS": 20000,
            "KALAH_CACHE_DIR": str(tmp_path / name),
            **config,
        }
    )


def ndjson(response: TestResponse) -> Iterator[dict[str, Any]]:
    """The events of a streamed response as they arrive (blank lines are heartbeats)."""
    buffer = b""
    for chunk in response.response:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


def without_time(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("time_ms", "cached")}


def test_events_deepen_in_order_and_the_last_is_the_one_shot_answer(tmp_path: Path) -> None:
    app = make_app(tmp_path, "live")
    response = app.test_client().get(QUERY, headers=NDJSON, buffered=False)
    assert response.status_code == 200
    assert response.mimetype == "application/x-ndjson"
    assert response.headers["X-Accel-Buffering"] == "no"
    events = list(ndjson(response))
    response.close()
    *progress, final = events
    assert final["final"] is True and all(e["final"] is False for e in progress)
    assert len(progress) >= 2
    depths = [e["depth"] for e in progress]
    assert depths == sorted(depths) and depths[-1] > depths[0]
    for event in progress:
        assert event["lower"] <= event["value"] <= event["upper"]
        assert {m["move"] for m in event["moves"]} == {1, 2, 3, 4, 5, 6}
        assert event["pv"] and event["pv"][0][0] == event["moves"][0]["move"]
        assert event["nodes"] <= SEARCHED["nodes"] + 50_000
    nodes = [e["nodes"] for e in progress]
    assert nodes == sorted(nodes)
    # The same request, one shot, on another server (its own engine and store): the same
    # answer, every value the same but the time it took.
    one_shot = make_app(tmp_path, "one-shot").test_client().get(QUERY)
    assert one_shot.status_code == 200
    assert final["answer"]["cached"] is False
    assert without_time(final["answer"]) == without_time(one_shot.get_json())
    # And the stream's answer is stored as a one-shot search's is.
    again = app.test_client().get(QUERY).get_json()
    assert again["cached"] is True and without_time(again) == without_time(final["answer"])


def test_events_show_the_root_moves_searched_within_a_deepening(tmp_path: Path) -> None:
    """Between two deepenings the events say which depth is underway and how many root moves
    it has searched, and a move searched shows its value of that depth already."""
    response = make_app(tmp_path, "within").test_client().get(QUERY, headers=NDJSON, buffered=False)
    *progress, final = list(ndjson(response))
    response.close()
    within = [e for e in progress if e["searching"] is not None]
    assert within, "no event between two deepenings"
    for event in within:
        assert event["searching"]["depth"] == event["depth"] + 1
        assert 0 <= event["searching"]["moves"] <= len(event["moves"])
    depths = [e["depth"] for e in progress]
    steps = [(e["depth"], e["searching"]["moves"]) for e in within]
    # Progress only goes forward (a deepening cut by its share of the budget is dropped).
    assert depths == sorted(depths) and steps == sorted(steps)
    assert all(e["source"] == "search" for e in progress)
    assert final["answer"]["depth"] >= progress[-1]["depth"]


def test_a_long_stream_of_a_deep_book_position_starts_from_its_record(tmp_path: Path) -> None:
    """Issue 50's goal: the piet-hein start streamed with a budget beyond the deep book's
    (10 s): its first event is the deep book's record (depth, bounds, estimates, said to be
    the book's), no later event is shallower, and the last is the one-shot answer, which a
    budget too small to deepen past the record leaves the record's."""
    app = make_app(tmp_path, "booked")
    book = app.test_client().get("/v1/analysis?rules=piet-hein&position=start").get_json()
    assert book["book"]["kind"] == "deep" and book["depth"] is not None
    response = app.test_client().get(BOOKED, headers=NDJSON, buffered=False)
    *progress, final = list(ndjson(response))
    response.close()
    first = progress[0]
    assert first["source"] == "deep book" and first["nodes"] == 0
    shown = ("depth", "value", "lower", "upper", "moves", "pv")
    assert {k: first[k] for k in shown} == {k: book[k] for k in shown}
    assert all(e["depth"] >= book["depth"] for e in progress)
    searching = [e["searching"]["depth"] for e in progress if e["searching"] is not None]
    assert searching and searching == sorted(searching)  # the table refilled, in the open
    answer = final["answer"]
    assert answer["depth"] == book["depth"] and answer["book"] == book["book"]
    one_shot = make_app(tmp_path, "booked-one-shot").test_client().get(BOOKED)
    assert without_time(answer) == without_time(one_shot.get_json())


def test_server_sent_events_carry_the_same_events(tmp_path: Path) -> None:
    client = make_app(tmp_path, "sse").test_client()
    response = client.post(
        "/v1/analysis",
        json={
            "rules": "piet-hein",
            "position": "start",
            "limits": {"time_ms": 20000, "nodes": 300_000},
        },
        headers=SSE,
        buffered=False,
    )
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    text = response.get_data().decode()
    frames = [f for f in text.split("\n\n") if f]
    assert all(f.startswith("data: ") or f.startswith(":") for f in frames)
    events = [json.loads(f[len("data: ") :]) for f in frames if f.startswith("data: ")]
    assert events[-1]["final"] is True and events[-1]["answer"]["limits"]["nodes"] == 300_000


def test_an_answer_already_known_exactly_is_one_event(tmp_path: Path) -> None:
    client = make_app(tmp_path, "known").test_client()
    first = client.get(SMALL)
    assert first.get_json()["exact"] is True
    response = client.get(SMALL, headers=NDJSON, buffered=False)
    events = list(ndjson(response))
    assert len(events) == 1 and events[0]["final"] is True
    assert events[0]["answer"]["cached"] is True
    assert without_time(events[0]["answer"]) == without_time(first.get_json())


def test_without_a_stream_type_nothing_changes(client: Any) -> None:
    for accept in ("application/json", "*/*", "text/html"):
        response = client.get(SMALL, headers={"Accept": accept})
        assert response.status_code == 200 and response.mimetype == "application/json"


def test_a_stream_budget_above_its_maximum_is_a_422_naming_the_field(tmp_path: Path) -> None:
    client = make_app(tmp_path, "max", KALAH_STREAM_MAX_TIME_MS=30000).test_client()
    response = client.get(LONG, headers=NDJSON)
    assert response.status_code == 422
    problem = response.get_json()
    assert problem["field"] == "time_ms" and problem["max"] == 30000
    # A one-shot request keeps its own maximum.
    assert client.get(LONG.replace("60000", "25000")).status_code == 422
    streamed = client.get(LONG.replace("60000", "25000"), headers=NDJSON, buffered=False)
    assert streamed.status_code == 200
    streamed.close()


@pytest.mark.timeout(300)  # a search not stopped would run an hour
def test_dropped_streams_leave_no_engine_searching(tmp_path: Path) -> None:
    """20 streams of a search that would run an hour, dropped after their first event:
    closing each stops its search and gives its engine back before close returns."""
    app = make_app(
        tmp_path,
        "drop",
        KALAH_ENGINES=24,
        KALAH_THREADS=48,
        KALAH_TT_MB=4,
        KALAH_STREAM_MAX_TIME_MS=3_600_000,
    )
    client = app.test_client()
    streams = []
    for _ in range(20):
        response = client.get(HOUR, headers=NDJSON, buffered=False)
        assert response.status_code == 200
        first = next(ndjson(response))
        assert first["final"] is False
        streams.append(response)
    pool = app.extensions["kalah"].engines()
    assert pool.busy == 20
    for response in streams:
        response.close()
    assert pool.busy == 0


def test_a_stream_is_charged_the_time_it_ran(tmp_path: Path) -> None:
    limited = {"KALAH_LIMITS": "on", "KALAH_LIMIT_ANONYMOUS": "100000/minute"}
    client = make_app(tmp_path, "charged", **limited).test_client()
    response = client.get(QUERY, headers=NDJSON, buffered=False)
    # Reserved and shown up front: the whole budget (the request settles before any event).
    assert response.headers["Kalah-Cost"] == str(1 + math.ceil(SEARCHED["time_ms"] / 100))
    final = list(ndjson(response))[-1]
    response.close()
    ran = math.ceil(final["answer"]["time_ms"] / 100)
    rules = client.get("/v1/rules")
    assert rules.headers["RateLimit-Remaining"] == str(100000 - 1 - ran - 1)


def test_a_dropped_stream_is_refunded_what_it_did_not_run(tmp_path: Path) -> None:
    limited = {"KALAH_LIMITS": "on", "KALAH_LIMIT_ANONYMOUS": "100000/minute"}
    client = make_app(tmp_path, "refund", **limited).test_client()
    response = client.get(LONG, headers=NDJSON, buffered=False)
    budget = math.ceil(60000 / 100)
    assert response.headers["Kalah-Cost"] == str(1 + budget)
    next(ndjson(response))
    response.close()
    left = int(client.get("/v1/rules").headers["RateLimit-Remaining"])
    # Some search ran (at least one unit), far less than the minute reserved.
    assert 100000 - 1 - budget - 1 < left <= 100000 - 1 - 1 - 1


@pytest.mark.parametrize("accept", ["text/event-stream", "application/x-ndjson"])
def test_a_bad_request_is_still_a_problem(client: Any, accept: str) -> None:
    response = client.get("/v1/analysis?position=nonsense", headers={"Accept": accept})
    assert response.status_code == 422 and response.get_json()["field"] == "position"


@pytest.mark.timeout(300)  # waits for a heartbeat, never for a time
def test_a_quiet_stream_sends_heartbeats(tmp_path: Path) -> None:
    """While the proof runs nothing new is shown for seconds: a blank NDJSON line, and an
    SSE comment, keep proxies from closing the stream."""
    app = make_app(tmp_path, "heartbeat", KALAH_STREAM_HEARTBEAT_MS=10)
    for headers, beat in ((NDJSON, b"\n"), (SSE, b": heartbeat\n\n")):
        response = app.test_client().get(LONG, headers=headers, buffered=False)
        for chunk in response.response:
            if chunk == beat:
                break
            assert chunk.strip(), chunk  # events until then
        response.close()
    assert app.extensions["kalah"].engines().busy == 0
