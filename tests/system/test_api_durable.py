"""Issue 13, the state users rely on: keys and jobs in a state store apart from the cache,
never evicted (refused at start otherwise), jobs of bounded size that pay for what they ask,
read only by their owner and scheduled fairly across keys. Real redis-server throughout."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from figures import measured
from harness import ROOT, RedisServer, free_port
from test_batch_workers import endgame_positions, start_worker

from kalah_service import create_app
from kalah_service.base.config import load_settings
from kalah_service.jobs.items import parse_batch
from kalah_service.jobs.redis_jobs import RedisJobStore
from kalah_service.ratelimit.costs import body_cost
from kalah_service.stores.state import EvictingStateStore

COMPOSE = ROOT / "deploy" / "compose.yaml"
K8S_REDIS = ROOT / "deploy" / "k8s" / "redis.yaml"


def shipped_state_args() -> list[str]:
    """The state store's redis-server options as deploy/compose.yaml ships them."""
    command = yaml.safe_load(COMPOSE.read_text())["services"]["state"]["command"]
    assert command[0] == "redis-server"
    return [str(a) for a in command[1:]]


def options(args: list[str]) -> dict[str, str]:
    return {args[i].lstrip("-"): args[i + 1] for i in range(0, len(args) - 1, 2)}


def redis_server(*args: str) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
    server = RedisServer(free_port(), args=args)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def evicting_redis() -> Iterator[RedisServer]:
    """A cache-like Redis: 60 MB, least recently used keys evicted (the old shipped one)."""
    yield from redis_server("--maxmemory", "60mb", "--maxmemory-policy", "allkeys-lru")


@pytest.fixture
def state_redis() -> Iterator[RedisServer]:
    """A Redis with the state store's shipped options (append-only, never evicts)."""
    yield from redis_server(*shipped_state_args())


def test_the_shipped_state_store_persists_and_never_evicts_in_compose_and_kubernetes() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    for name, wanted in (("state", "noeviction"), ("redis", "allkeys-lru")):
        args = options([str(a) for a in compose["services"][name]["command"][1:]])
        assert args["maxmemory-policy"] == wanted, name
    state = options(shipped_state_args())
    assert (state["appendonly"], state["appendfsync"]) == ("yes", "everysec")
    for service in ("api", "worker"):
        env = compose["services"][service]["environment"]
        assert env["KALAH_STATE_REDIS_URL"] == "redis://state:6379/0", service
    k8s = {
        d["metadata"]["name"]: d
        for d in yaml.safe_load_all(K8S_REDIS.read_text())
        if d["kind"] != "Service"
    }
    container = k8s["kalah-state"]["spec"]["template"]["spec"]["containers"][0]
    assert options(container["args"]) | {"maxmemory": ""} == state | {"maxmemory": ""}
    assert k8s["kalah-state"]["spec"]["volumeClaimTemplates"], "a persistent volume"
    cache = k8s["kalah-redis"]["spec"]["template"]["spec"]["containers"][0]
    assert options(cache["args"])["maxmemory-policy"] == "allkeys-lru"
    for manifest in ("api.yaml", "worker.yaml"):
        text = (ROOT / "deploy" / "k8s" / manifest).read_text()
        assert 'KALAH_STATE_REDIS_URL, value: "redis://kalah-state:6379/0"' in text, manifest


def test_an_evicting_state_store_is_refused_at_start(
    evicting_redis: RedisServer, state_redis: RedisServer
) -> None:
    with pytest.raises(EvictingStateStore, match="maxmemory-policy allkeys-lru"):
        create_app({"TESTING": True, "KALAH_REDIS_URL": evicting_redis.url})
    # The cache may evict when the keys and jobs are elsewhere.
    app = create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": evicting_redis.url,
            "KALAH_STATE_REDIS_URL": state_redis.url,
        }
    )
    key, _ = app.extensions["kalah_auth"].store.create("standard")
    assert redis.Redis.from_url(state_redis.url).dbsize() == 2  # the key and its id
    assert redis.Redis.from_url(evicting_redis.url).dbsize() == 0
    answer = app.test_client().get(
        "/v1/analysis?position=start&rules=kalah&houses=3&seeds=2",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert answer.status_code == 200
    assert redis.Redis.from_url(evicting_redis.url).dbsize() >= 1, "the answer is cached there"


def test_junk_jobs_are_small_charged_and_cannot_evict_the_keys(
    evicting_redis: RedisServer, state_redis: RedisServer
) -> None:
    """Finding 1's repro: 20 items whose rules hold 100 K characters each (a 4 MB body) made a
    job of 13.1 MB that stayed a day, for 1 unit; 8 of them evicted every API key."""
    app = create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": evicting_redis.url,
            "KALAH_STATE_REDIS_URL": state_redis.url,
        }
    )
    client = app.test_client()
    key, _ = app.extensions["kalah_auth"].store.create("premium")
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    app.extensions["kalah_jobs"].beat("a worker")  # else the jobs are refused (503)
    junk = {"position": "start", "rules": {"houses": "é" * 102400}}
    body = json.dumps({"positions": [junk] * 20}, ensure_ascii=False).encode()
    assert len(body) > 4_000_000
    state = redis.Redis.from_url(state_redis.url)
    for _ in range(8):
        response = client.post("/v1/batch", data=body, content_type="application/json")
        assert response.status_code == 202, response.json
        # 1 for the request, 1 per 100 items, and the 4 MB body (read and parsed)
        assert response.headers["Kalah-Cost"] == str(2 + body_cost(len(body)))
        slots = client.get(response.headers["Location"]).json["results"]
        assert {s["field"] for s in slots} == {f"positions.{i}.rules.houses" for i in range(20)}
        assert all(len(s["detail"]) <= 240 for s in slots)
    stored = sum(int(state.memory_usage(k) or 0) for k in state.scan_iter("kalah:v1:job:*"))
    units = 2 + body_cost(len(body))
    measured(
        f"junk jobs (8 x 20 bad items, 4 MB bodies): {stored} bytes stored, {units} units each"
    )
    assert stored < 8 * 20 * 1024, f"{stored} bytes for 160 bad items"
    assert client.get("/v1/rules").status_code == 200, "the key still works"


def test_restart_of_the_shipped_state_store_loses_no_key_and_no_job(
    state_redis: RedisServer, tmp_path: Path
) -> None:
    """Keys and a running job on a Redis with the shipped options, restarted mid-job."""
    app = create_app({"TESTING": True, "KALAH_REDIS_URL": state_redis.url})
    store = app.extensions["kalah_auth"].store
    keys = [store.create("premium")[0] for _ in range(44)]
    api = app.test_client()
    api.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {keys[0]}"
    # Boards with 34-40 seeds in houses: not proven in 100 ms, so the job runs ~10 s.
    items = [p for p in endgame_positions(4000, seed=13) if sum(p["position"]["south"]) > 7]
    body = {"positions": heavier(items[:96]), "rules": "kalah", "limits": {"time_ms": 100}}
    log = tmp_path / "worker.log"
    worker = start_worker(state_redis.url, log)
    try:
        response = api.post("/v1/batch", json=body)
        assert response.status_code == 202, response.json
        location = response.headers["Location"]
        while api.get(location + "?limit=1").json["progress"]["done"] == 0:
            time.sleep(0.02)
        running = api.get(location + "?limit=1").json
        assert running["status"] == "running" and running["progress"]["done"] < 96
        state_redis.stop()
        state_redis.start()
        while (status := api.get(location + "?limit=1").json)["status"] not in ("finished",):
            assert status["status"] != "failed", status
            time.sleep(0.1)
        assert status["progress"] == {"done": 96, "total": 96}
        results = api.get(location, headers={"Accept": "application/x-ndjson"}).data.splitlines()
        assert len(results) == 96 and all("value" in json.loads(r) for r in results)
    finally:
        worker.terminate()
        worker.wait(10)
    fresh = create_app({"TESTING": True, "KALAH_REDIS_URL": state_redis.url}).test_client()
    answers = [
        fresh.get("/v1/rules", headers={"Authorization": f"Bearer {k}"}).status_code for k in keys
    ]
    assert answers == [200] * 44, "every key survived the restart"
    measured("state store restarted mid-job (shipped options): keys 44/44, job 96/96 finished")


def heavier(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same boards with 24 more seeds in the houses (2 more in each), stores shrunk."""
    out = []
    for item in items:
        board = dict(item["position"])
        south, north = [c + 2 for c in board["south"]], [c + 2 for c in board["north"]]
        stores = list(board["stores"])
        for _ in range(24):
            stores[stores.index(max(stores))] -= 1
        out.append({"position": {**board, "south": south, "north": north, "stores": stores}})
    return out


def test_jobs_are_served_round_robin_across_keys(redis_server: RedisServer) -> None:
    """Finding 6: key B's small job waited minutes behind key A's 1,001 items in one FIFO.
    Now each take gives the next chunk of the next key: B's chunk is the second one run."""
    redis_server.flush()
    settings = load_settings({"KALAH_REDIS_URL": redis_server.url}, environ={})
    store = RedisJobStore(redis_server.url, ttl_s=600)
    big = store.create(
        parse_batch(settings, endgame_positions(40), "kalah", {"time_ms": 9000}), 4, owner="a"
    )
    small = store.create(parse_batch(settings, endgame_positions(3, seed=2), "kalah"), 4, "b")
    also_a = store.create(parse_batch(settings, endgame_positions(4, seed=3), "kalah"), 4, "a")
    assert store.waiting() == 10 + 1 + 1
    leases = [store.take("w") for _ in range(12)]
    order = [(lease.job_id, lease.chunk) for lease in leases if lease is not None]
    assert order[:3] == [(big.id, 0), (small.id, 0), (big.id, 1)]
    assert order[3:] == [(big.id, n) for n in range(2, 10)] + [(also_a.id, 0)]
    assert store.take("w") is None


def test_a_job_pays_its_items_up_front_and_needs_room_for_its_first_chunk(
    redis_app: Any,
) -> None:
    """Issue 32: a job no longer reserves its whole search budget (10,000 items at 1 s cost
    about 110,000 units, impossible with a standard key): it pays 1 unit per 100 items now,
    and its searches as they run (test_batch_hardening); the bucket must hold its first
    chunk's budget."""
    client = redis_app.test_client()
    key, _ = redis_app.extensions["kalah_auth"].store.create("standard")  # 1200/minute
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    redis_app.extensions["kalah_jobs"].beat("a worker")
    items = [*endgame_positions(20), {"position": "nonsense"}, {"position": "start"}]
    body = {"positions": items, "rules": "kalah", "limits": {"time_ms": 1000}}
    response = client.post("/v1/batch", json=body)
    assert response.status_code == 202, response.json
    assert response.headers["Kalah-Cost"] == str(1 + 1), "the items and the request"
    big = {"positions": endgame_positions(10_000, seed=9), "limits": {"time_ms": 1000}}
    data = json.dumps(big).encode()
    response = client.post("/v1/batch", data=data, content_type="application/json")
    assert response.status_code == 202, response.json  # 110,001 units before: a 429
    # The items (1 per 100), the request, and reading the body (above 64 KiB)
    assert response.headers["Kalah-Cost"] == str(100 + 1 + body_cost(len(data)))
    # 32 items of 10 s (the first chunk: 3,200 units) do not fit in what is left.
    heavy = {"positions": big["positions"][:100], "limits": {"time_ms": 10000}}
    response = client.post("/v1/batch", json=heavy)
    assert response.status_code == 429 and response.headers["Kalah-Cost"] == "0"
