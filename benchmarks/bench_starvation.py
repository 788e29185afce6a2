"""Cheap requests while long searches run (issue 13, finding 5), with and without the lower CPU
priority of long searches (``KALAH_LONG_NICE``), interleaved in one run.

Each round starts a default 2-worker gunicorn (a real redis-server) at one setting, runs 6
searches at the maximum budget (10 s), and meanwhile asks 5 cheap uncached positions and
``/livez`` one after the other; it prints the slowest cheap answer and ``/livez`` of each
round and the medians per setting, and the load-independent figure: the cheap searches' node
rate (nodes per ms, from the answers) as a share of the same searches' rate run alone by an
engine of this process right after, i.e. the share of a core they got. ``--load N`` adds N
busy-looping processes at normal priority (the other work of a shared machine, e.g. the rest
of the test suite).

    .venv/bin/python benchmarks/bench_starvation.py --rounds 3 --load 2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))
sys.path.append(str(ROOT / "tests" / "system"))

from harness import Gunicorn, RedisServer  # noqa: E402
from test_batch_workers import endgame_positions  # noqa: E402

from kalah_core.position import Position  # noqa: E402
from kalah_core.rules import Rules  # noqa: E402
from kalah_core.solver import Engine  # noqa: E402


def spin() -> None:
    while True:
        pass


def alone_rate(positions: list[dict[str, object]]) -> float:
    """Nodes per ms of the same searches by an engine of this process, nothing else of ours
    running: what a cheap search gets with a core to itself on this machine now."""
    rules = Rules()
    engine = Engine(tt_mb=64)
    nodes = ms = 0.0
    for position in positions:
        analysis = engine.analyse(Position.from_json(position), rules, time_ms=1000)
        nodes += analysis.nodes
        ms += analysis.time_ms
        engine = Engine(tt_mb=64)  # uncached, as on the server
    return nodes / ms


def one_round(redis_url: str, nice: int, seed: int) -> tuple[list[float], float, list[int], float]:
    server = Gunicorn(
        {
            "KALAH_REDIS_URL": redis_url,
            "KALAH_EGDB_PATH": "off",
            "KALAH_MAX_TIME_MS": "10000",
            "KALAH_LONG_NICE": str(nice),
            "KALAH_LIMIT_ANONYMOUS": "100000/minute",
        }
    )
    base = server.start()
    time.sleep(2)  # each worker makes its first engines at start
    try:
        heavy = [
            {**p["position"], "south": [c + 8 for c in p["position"]["south"]]}
            for p in endgame_positions(6, seed=seed)
        ]
        cheap = [p["position"] for p in endgame_positions(5, seed=seed + 1)]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            running = [
                pool.submit(
                    requests.post,
                    base + "/v1/analysis",
                    json={"position": p, "limits": {"time_ms": 10000}},
                    timeout=40,
                )
                for p in heavy
            ]
            time.sleep(1.0)
            cheap_s, livez_s = [], []
            nodes = ms = 0.0
            for position in cheap:
                started = time.perf_counter()
                answer = requests.post(
                    base + "/v1/analysis", json={"position": position}, timeout=20
                )
                cheap_s.append(time.perf_counter() - started)
                assert answer.status_code == 200 and answer.json()["cached"] is False
                nodes += answer.json()["nodes"]
                ms += answer.json()["time_ms"]
                started = time.perf_counter()
                requests.get(base + "/livez", timeout=10)
                livez_s.append(time.perf_counter() - started)
            statuses = [f.result().status_code for f in running]
        # The share of a core the cheap searches got while the six ran.
        share = (nodes / ms) / alone_rate(cheap)
        return cheap_s, max(livez_s), statuses, share
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=0, help="busy processes alongside")
    parser.add_argument("--nice", type=int, default=10, help="the setting compared with 0")
    args = parser.parse_args()
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for spinner in spinners:
        spinner.start()
    results: dict[int, list[tuple[list[float], float]]] = {0: [], args.nice: []}
    shares: dict[int, list[float]] = {0: [], args.nice: []}
    try:
        with RedisServer() as redis_server:
            for round_ in range(args.rounds):
                for nice in (0, args.nice) if round_ % 2 == 0 else (args.nice, 0):
                    redis_server.flush()
                    cheap, livez, statuses, share = one_round(
                        redis_server.url, nice, 31 + 2 * round_
                    )
                    results[nice].append((cheap, livez))
                    shares[nice].append(share)
                    print(
                        f"round {round_ + 1} KALAH_LONG_NICE={nice:>2}: cheap "
                        f"{' '.join(f'{c:.3f}' for c in cheap)} s, slowest /livez {livez:.3f} s; "
                        f"the six {statuses}; the cheap searches' node rate {share:.0%} of "
                        "the same searches alone",
                        flush=True,
                    )
    finally:
        for spinner in spinners:
            spinner.terminate()
    for nice, figures in results.items():
        every = [c for cheap, _ in figures for c in cheap]
        livez = statistics.median(lv for _, lv in figures)
        print(
            f"KALAH_LONG_NICE={nice:>2}: cheap answers median {statistics.median(every):.3f} s, "
            f"sum {sum(every):.2f} s, worst {max(every):.3f} s; median slowest /livez "
            f"{livez:.3f} s; node rate {statistics.median(shares[nice]):.0%} (median) of the "
            f"same searches alone; {args.load} busy processes alongside"
        )


if __name__ == "__main__":
    main()
