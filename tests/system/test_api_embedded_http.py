"""The embedded default over real HTTP: gunicorn with 2 workers, no Redis, one answer store
on disk shared by both workers (and kept across a restart)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from harness import Gunicorn
from test_api_http import metric

from kalah_core import Position, Rules, legal_moves, play
from kalah_core.book import shipped

HEURISTIC = "position=start&seeds=6&time_ms=300"
"""Kalah(6,6) in 300 ms: an estimate, whose depth and PV depend on the worker's search."""


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    store = Path(tmp_path_factory.mktemp("embedded")) / "answers"
    server = Gunicorn({"KALAH_REDIS_URL": "", "KALAH_CACHE_DIR": str(store)})
    server.start(ready=True)
    try:
        yield server
    finally:
        server.close()


def get(base: str, query: str, **headers: str) -> requests.Response:
    headers.setdefault("Connection", "close")  # a fresh connection: either worker may answer
    return requests.get(f"{base}/v1/analysis?{query}", headers=headers, timeout=30)


def content(response: requests.Response) -> dict[str, Any]:
    data: dict[str, Any] = response.json()
    data.pop("cached")
    return data


def answers(base: str) -> tuple[float, float]:
    text = requests.get(f"{base}/metrics", timeout=10).text
    return (
        metric(text, "kalah_analysis_answers_total", cached="false"),
        metric(text, "kalah_analysis_answers_total", cached="true"),
    )


def test_eight_gets_one_search_one_answer_from_both_workers(embedded: Gunicorn) -> None:
    base = embedded.base
    searched, hits = answers(base)
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: get(base, HEURISTIC), range(8)))
    assert all(r.status_code == 200 for r in responses)
    assert not responses[0].json()["exact"]
    searched_after, hits_after = answers(base)
    assert (searched_after - searched, hits_after - hits) == (1, 7)
    assert sorted(r.json()["cached"] for r in responses) == [False] + [True] * 7
    assert len({r.headers["ETag"] for r in responses}) == 1
    assert all(content(r) == content(responses[0]) for r in responses)
    # The worker that did not search reads the shared store (its memory is empty): ask on
    # fresh connections until it answered; the answer is the same bytes.
    cached_body = next(r.content for r in responses if r.json()["cached"])
    for _ in range(200):
        again = get(base, HEURISTIC)
        assert again.content == cached_body
        text = requests.get(f"{base}/metrics", timeout=10).text
        if metric(text, "kalah_cache_lookups_total", level="embedded", result="hit") >= 1:
            break
    else:
        pytest.fail("no request reached the other worker")


def test_the_first_answers_etag_revalidates(embedded: Gunicorn) -> None:
    query = "position=0a4410-2-442114-1-n&houses=6&seeds=3&time_ms=300"
    first = get(embedded.base, query)
    assert first.status_code == 200 and first.json()["cached"] is False
    tag = first.headers["ETag"]
    statuses = [get(embedded.base, query, **{"If-None-Match": tag}).status_code for _ in range(6)]
    assert statuses == [304] * 6


def test_an_exact_answer_survives_a_restart(embedded: Gunicorn) -> None:
    query = "position=start&houses=4&seeds=3"
    first = get(embedded.base, query)
    assert first.json()["exact"] and first.json()["cached"] is False
    embedded.stop()
    embedded.start()
    again = get(embedded.base, query)
    assert again.json()["cached"] is True
    assert content(again) == content(first)
    assert again.headers["ETag"] == first.headers["ETag"]


def book_positions(rules: Rules, depth: int, count: int, seed: int) -> list[Position]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        position = Position.start(rules)
        for _ in range(rng.randint(0, depth)):
            result = play(position, rules, rng.choice(legal_moves(position, rules)))
            if result.over:
                break
            position = result.after
        found.append(position)
    return found


@pytest.mark.parametrize("preset", ["kalah", "kalah-pie", "kalaha"])
def test_the_start_and_book_positions_are_exact_at_the_default_budget(
    embedded: Gunicorn, preset: str
) -> None:
    rules = Rules.preset(preset)
    start = get(embedded.base, f"position=start&rules={preset}").json()
    assert start["exact"] and start["book"] is not None
    if preset == "kalah":
        assert start["value"] == 8
    key = next(k for k in shipped().sections if k.end == rules.end)
    depth = shipped().sections[key].depth
    for position in book_positions(rules, depth, 10, seed=len(preset)):
        answer = get(embedded.base, f"position={position.compact()}&rules={preset}").json()
        assert answer["exact"] and answer["book"] == start["book"], position.compact()
        assert all(m["exact"] for m in answer["moves"])
        assert answer["nodes"] == 0  # no search


def test_a_large_batch_runs_as_a_job_without_redis(embedded: Gunicorn) -> None:
    base = embedded.base
    rules = Rules(houses=4, seeds=3)
    positions = [p.compact() for p in book_positions(rules, 8, 40, seed=40)]
    body = {
        "positions": [{"position": p} for p in positions],
        "rules": {"houses": 4, "seeds": 3},
        "limits": {"time_ms": 200},
    }
    created = requests.post(f"{base}/v1/batch", json=body, timeout=30)
    assert created.status_code == 202
    location = base + created.headers["Location"]
    job: dict[str, Any] = {}
    while True:  # until the job ends (pytest-timeout guards a hang)
        job = requests.get(location, params={"limit": 1000}, timeout=10).json()
        if job["status"] in ("finished", "failed"):
            break
        time.sleep(0.2)
    assert job["status"] == "finished" and job["progress"] == {"done": 40, "total": 40}
    for position, result in zip(positions, job["results"], strict=True):
        single = get(base, f"position={position}&houses=4&seeds=3&time_ms=200")
        assert single.json()["cached"] is True  # the job's answer, from the shared store
        result.pop("cached")
        assert result == content(single)
    lines = requests.get(location, headers={"Accept": "application/x-ndjson"}, timeout=10)
    assert lines.headers["Kalah-Job-Status"] == "finished"
    assert len(lines.content.splitlines()) == 40
