"""Real HTTP: gunicorn with ``api/ops/gunicorn_conf.py``, 2 workers and a real Redis."""

from __future__ import annotations

import re

import requests

MIDGAME = "233110-13-013025-14-s"


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total


def test_analysis_over_http_and_cache_hits_across_workers(gunicorn_server: str) -> None:
    url = f"{gunicorn_server}/v1/analysis?position={MIDGAME}&time_ms=4000"
    first = requests.get(url, timeout=10)
    assert first.status_code == 200
    assert first.headers["Content-Type"] == "application/json"
    assert first.json()["cached"] is False and first.json()["exact"] is True
    # Fresh connections land on either worker; the one that did not compute has an empty
    # memory, so its hits come from Redis. Ask until one did (each try: a coin toss).
    redis_hits = 0.0
    for _ in range(200):
        again = requests.get(url, headers={"Connection": "close"}, timeout=10)
        assert again.json()["cached"] is True
        assert again.json()["value"] == first.json()["value"]
        text = requests.get(f"{gunicorn_server}/metrics", timeout=10).text
        redis_hits = metric(text, "kalah_cache_lookups_total", level="redis", result="hit")
        if redis_hits >= 1:
            break
    assert redis_hits >= 1, "no request reached the other worker"


def test_etag_304_over_http(gunicorn_server: str) -> None:
    url = f"{gunicorn_server}/v1/best-move?position=start&houses=4&seeds=2"
    requests.get(url, timeout=10)
    cached = requests.get(url, timeout=10)
    assert cached.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    again = requests.get(url, headers={"If-None-Match": cached.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and again.content == b""


def test_post_and_play_over_http(gunicorn_server: str) -> None:
    answer = requests.post(
        f"{gunicorn_server}/v1/analysis",
        json={
            "position": {"south": [2, 2, 2], "north": [2, 2, 2]},
            "rules": {"houses": 3, "seeds": 2},
        },
        timeout=10,
    ).json()
    assert answer["exact"] is True and answer["position"] == "222-0-222-0-s"
    played = requests.post(f"{gunicorn_server}/v1/play", json={"moves": [3]}, timeout=10).json()
    assert played["steps"][0]["extra_turn"] is True


def test_errors_over_http(gunicorn_server: str) -> None:
    response = requests.get(
        f"{gunicorn_server}/v1/analysis?position=start&time_ms=999999", timeout=10
    )
    assert response.status_code == 422
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["field"] == "time_ms" and response.json()["max"] == 5000
    big = requests.post(
        f"{gunicorn_server}/v1/analysis",
        data=b"{" + b" " * 100_000 + b"}",
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert big.status_code == 413 and big.json()["field"] == "body"


def test_metrics_aggregate_every_worker(gunicorn_server: str) -> None:
    before = requests.get(f"{gunicorn_server}/metrics", timeout=10).text
    count_before = metric(before, "kalah_http_requests_total", endpoint="/livez")
    for _ in range(20):
        assert requests.get(
            f"{gunicorn_server}/livez", headers={"Connection": "close"}, timeout=10
        ).ok
    after = requests.get(f"{gunicorn_server}/metrics", timeout=10)
    assert after.headers["Content-Type"].startswith("text/plain")
    assert metric(after.text, "kalah_http_requests_total", endpoint="/livez") == count_before + 20
    for name in (
        "kalah_http_request_duration_seconds_count",
        "kalah_search_nodes_total",
        "kalah_analysis_answers_total",
        "kalah_cache_lookups_total",
    ):
        assert name in after.text


def test_readyz_and_docs_over_http(gunicorn_server: str) -> None:
    ready = requests.get(f"{gunicorn_server}/readyz", timeout=10).json()
    assert ready["backend"] == "redis" and ready["checks"]["engine"]["ok"] is True
    # No kalah worker runs beside this server (unless another test's is still alive): jobs
    # cannot run, which readiness says without taking the analyses out of service.
    jobs = ready["checks"]["jobs"]
    assert ready["status"] == ("ready" if jobs["ok"] else "degraded"), ready
    assert requests.get(f"{gunicorn_server}/openapi.json", timeout=10).json()["info"]["title"]
    assert "swagger" in requests.get(f"{gunicorn_server}/docs", timeout=10).text.lower()


def test_game_analysis_over_http(gunicorn_server: str) -> None:
    body = {"rules": {"houses": 3, "seeds": 2}, "moves": [2, 1, 3]}
    response = requests.post(f"{gunicorn_server}/v1/games/analysis", json=body, timeout=30)
    assert response.status_code == 200
    data = response.json()
    assert [m["move"] for m in data["moves"]] == [2, 1, 3] and data["exact"] is True
    assert all(m["loss"] == m["value_before"] - m["value_after"] >= 0 for m in data["moves"])
    bad = requests.post(
        f"{gunicorn_server}/v1/games/analysis", json={**body, "moves": [2, 9]}, timeout=10
    )
    assert bad.status_code == 422 and bad.json()["field"] == "moves.1"
