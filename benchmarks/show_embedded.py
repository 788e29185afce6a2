"""The embedded default seen from outside, against a running server (``kalah serve``):

1. how long its background databases took (``GET /v1/rules``), waiting until all are attached;
2. ``GET /v1/analysis?position=start&rules=kalah``: exact +8 at the default budget;
3. every position of the first 6 sowings of random ``kalah`` games at the default budget:
   how many are exact;
4. 8 identical GETs at once: searches, cache hits and distinct bodies (without ``cached``);
5. 6 revalidations of the first answer's ETag: their statuses;
6. a 40-position batch (a job): its results against the single-position answers.

    KALAH_LIMIT_ANONYMOUS=1000000/minute kalah serve &   # hundreds of requests from one IP
    python benchmarks/show_embedded.py --server http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from kalah_core import Position, Rules, legal_moves, play


def answers(base: str) -> tuple[float, float]:
    """(computed, cached) analysis answers so far, summed over every worker."""
    totals = [0.0, 0.0]
    for line in requests.get(f"{base}/metrics", timeout=10).text.splitlines():
        match = re.match(r"^kalah_analysis_answers_total\{(.*)\} (\S+)$", line)
        if match:
            totals['cached="true"' in match.group(1)] += float(match.group(2))
    return totals[0], totals[1]


def get(base: str, query: str, **headers: str) -> requests.Response:
    headers.setdefault("Connection", "close")
    response = requests.get(f"{base}/v1/analysis?{query}", headers=headers, timeout=60)
    if response.status_code not in (200, 304):  # e.g. a 429: start the server with a
        raise SystemExit(f"{query}: HTTP {response.status_code} {response.text}")  # high limit
    return response


def without_cached(response: requests.Response) -> bytes:
    data: dict[str, Any] = response.json()
    data.pop("cached")
    return json.dumps(data, sort_keys=True).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="http://127.0.0.1:8000")
    parser.add_argument("--games", type=int, default=50)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args()
    base = args.server.rstrip("/")

    started = time.monotonic()
    while True:
        status = requests.get(f"{base}/v1/rules", timeout=10).json()["databases"]
        if all(b["state"] in ("attached", "failed") for b in status["builds"]):
            break
        time.sleep(2)
    print(f"1. databases ready after {time.monotonic() - started:.0f} s of waiting:")
    for build in status["builds"]:
        print(
            f"   {build['rules']} ({', '.join(build['presets'])}): {build['state']}, "
            f"{build['seconds']} s in this worker"
        )
    for db in status["attached"]:
        print(f"   attached {db['rules']} n{db['max_seeds']} {db['path']}")

    t = time.perf_counter()
    start = get(base, "position=start&rules=kalah").json()
    print(
        f"2. start: value {start['value']:+d}, exact {start['exact']}, book {start['book']}, "
        f"{(time.perf_counter() - t) * 1000:.0f} ms"
    )

    rules = Rules.preset("kalah")
    rng = random.Random(args.seed)
    seen: set[Position] = set()
    for _ in range(args.games):
        position = Position.start(rules)
        seen.add(position)
        for _ in range(6):
            result = play(position, rules, rng.choice(legal_moves(position, rules)))
            if result.over:
                break
            position = result.after
            seen.add(position)
    slowest, exact = 0.0, 0
    for position in sorted(seen, key=Position.compact):
        t = time.perf_counter()
        answer = get(base, f"position={position.compact()}&rules=kalah").json()
        slowest = max(slowest, time.perf_counter() - t)
        exact += answer["exact"] and all(m["exact"] for m in answer["moves"])
    print(
        f"3. first 6 sowings of {args.games} random games: {exact}/{len(seen)} distinct "
        f"positions exact (every move), slowest answer {slowest * 1000:.0f} ms"
    )

    query = f"position=start&seeds=6&time_ms={rng.randrange(300, 400)}"  # not cached yet
    computed, cached = answers(base)
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: get(base, query), range(8)))
    computed2, cached2 = answers(base)
    print(
        f"4. 8 identical GETs: {computed2 - computed:.0f} search, {cached2 - cached:.0f} cache "
        f"hits, {len({without_cached(r) for r in responses})} distinct answer, "
        f"{len({r.headers['ETag'] for r in responses})} ETag, cached flags "
        f"{sorted(r.json()['cached'] for r in responses)}"
    )

    fresh = f"position=start&seeds=5&time_ms={rng.randrange(300, 400)}"
    first = get(base, fresh)
    tag = first.headers["ETag"]
    statuses = [get(base, fresh, **{"If-None-Match": tag}).status_code for _ in range(6)]
    print(f"5. first answer (cached {first.json()['cached']}), 6 revalidations: {statuses}")

    small = Rules.preset("kalaha")
    items = []
    for _ in range(40):
        position = Position.start(small)
        for _ in range(rng.randrange(8, 20)):
            moves = legal_moves(position, small)
            result = play(position, small, rng.choice(moves))
            if result.over:
                break
            position = result.after
        items.append(position.compact())
    body = {
        "positions": [{"position": p} for p in items],
        "rules": "kalaha",
        "limits": {"time_ms": 300},
    }
    t = time.perf_counter()
    created = requests.post(f"{base}/v1/batch", json=body, timeout=60)
    job: dict[str, Any] = {}
    while created.status_code == 202:
        job = requests.get(
            base + created.headers["Location"], params={"limit": 1000}, timeout=10
        ).json()
        if job["status"] in ("finished", "failed"):
            break
        time.sleep(0.2)
    same = sum(
        json.dumps({k: v for k, v in result.items() if k != "cached"}, sort_keys=True).encode()
        == without_cached(get(base, f"position={p}&rules=kalaha&time_ms=300"))
        for p, result in zip(items, job.get("results", []), strict=False)
    )
    print(
        f"6. 40-position batch: HTTP {created.status_code}, job {job.get('status')}, "
        f"{job.get('progress')}, {time.perf_counter() - t:.1f} s, {same}/40 equal to the "
        f"single-position answers"
    )


if __name__ == "__main__":
    main()
