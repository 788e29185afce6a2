"""Books built on ``kalah worker`` processes through a real Redis (``kalah book build
--redis-url``): byte for byte the book of a local build, whatever the workers, and a worker
killed with SIGKILL in the middle of a chunk costs only the board in hand."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from test_batch_workers import start_worker

from kalah_core import Rules, book_build, tasks
from kalah_core.book import Book, Section
from kalah_core.book_build import build_section
from kalah_core.tasks import LocalExecutor, Task
from kalah_service.jobs.redis_jobs import RedisJobStore
from kalah_service.jobs.redis_layout import LEASES, TOKENS, JobKeys
from kalah_service.jobs.store import Completed
from kalah_service.jobs.work import TTL_S, RedisExecutor

ROOT = Path(__file__).resolve().parents[2]
RULES = [
    Rules(houses=4, seeds=2, pie=True),
    Rules(houses=4, seeds=3),
    Rules(houses=3, seeds=3, remaining="empty-side"),
    Rules(houses=4, seeds=2, capture="always", end="mover-empty"),
]
DEPTH = 4
SLOW = Rules(houses=5, seeds=3)
"""Its boards 3 sowings deep take tens of milliseconds each: a chunk of 16 lasts long enough
to kill its worker in the middle."""


def quiet() -> io.StringIO:
    return io.StringIO()  # the build's progress lines


def local_book(rules: Rules, depth: int, ckpt: Path | None = None) -> Section:
    return build_section(rules, depth, [], tt_mb=16, stream=quiet(), checkpoint=ckpt)


def test_a_book_built_on_workers_equals_the_local_build_byte_for_byte(
    redis_server: Any, tmp_path: Path
) -> None:
    redis_server.flush()
    workers = [start_worker(redis_server.url, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        executor = RedisExecutor(redis_server.url, stream=quiet(), poll_s=0.2)
        for rules in RULES:
            ckpt = tmp_path / f"{rules.key}.ckpt"
            remote = build_section(
                rules, DEPTH, [], tt_mb=16, stream=quiet(), checkpoint=ckpt, executor=executor
            )
            local = local_book(rules, DEPTH)
            assert remote.data and remote.depth == DEPTH
            assert Book([remote]).to_bytes() == Book([local]).to_bytes(), rules
            # The checkpoint holds the same records (in the order they came).
            width = 2 * rules.houses + rules.houses
            records = ckpt.read_bytes()
            assert len(records) % width == 0
            frontier = {records[i : i + width] for i in range(0, len(records), width)}
            assert frontier <= {local.data[i : i + width] for i in range(0, len(local.data), width)}

        # The command: kalah book build --redis-url, into a book file of its own.
        rules = RULES[1]
        out = tmp_path / "remote.bin"
        env = {**os.environ, "KALAH_EGDB_PATH": "off"}
        done = subprocess.run(
            [
                *(sys.executable, "-m", "kalah_core.cli", "book", "build", "--houses", "4"),
                *("--seeds", "3", "--depth", str(DEPTH), "-o", str(out), "--tt-mb", "16"),
                *("--redis-url", redis_server.url, "--json"),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["databases"] is None  # each worker's own
        assert "for the kalah workers of" in done.stderr
        assert out.read_bytes() == Book([local_book(rules, DEPTH)]).to_bytes()
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(10)
    # Every job was deleted by the build that posted it: nothing left but the workers' names.
    left = [k.decode() for k in redis.Redis.from_url(redis_server.url).keys("kalah:v1:job:*")]
    assert left == []


def test_a_worker_killed_mid_chunk_costs_only_its_board(redis_server: Any, tmp_path: Path) -> None:
    redis_server.flush()
    r = redis.Redis.from_url(redis_server.url)
    victim, survivor = (start_worker(redis_server.url, tmp_path / f"w{i}.log") for i in range(2))
    built: list[Section] = []
    failed: list[BaseException] = []

    def build() -> None:
        try:
            executor = RedisExecutor(redis_server.url, stream=quiet(), poll_s=0.2)
            built.append(build_section(SLOW, 3, [], tt_mb=16, stream=quiet(), executor=executor))
        except BaseException as error:  # pragma: no cover - reported below
            failed.append(error)

    builder = threading.Thread(target=build)
    builder.start()
    try:
        # Kill the victim while it holds a chunk of which it answered some boards, not all.
        killed: tuple[str, int, list[int], list[int]] | None = None
        while killed is None and builder.is_alive():
            for entry, holder in r.hgetall(TOKENS).items():
                if f":{victim.pid}/" not in holder.decode():
                    continue
                job_id, _, n = entry.decode().partition(":")
                keys = JobKeys(job_id)
                body = r.get(keys.chunk(int(n)))
                if body is None:
                    continue
                indices = [i for i, _ in json.loads(body)["items"]]
                answered = r.hmget(keys.results, indices)
                if any(answered) and not all(answered):
                    victim.send_signal(signal.SIGKILL)
                    victim.wait(10)
                    answered = r.hmget(keys.results, indices)  # as it died
                    have = [i for i, a in zip(indices, answered, strict=True) if a is not None]
                    killed = (job_id, int(n), indices, have)
                    break
            time.sleep(0.002)
        assert killed is not None, "the victim never died mid-chunk"
        job_id, n, indices, had = killed
        keys = JobKeys(job_id)
        assert 0 < len(had) < len(indices)
        assert r.sismember(keys.done, n) == 0, "killed before finishing its chunk"
        # The build completes on the survivor, once the victim's lease lapses (5 s).
        builder.join(300)
        assert not builder.is_alive() and not failed, failed
        assert survivor.poll() is None
    finally:
        for worker in (victim, survivor):
            if worker.poll() is None:
                worker.terminate()
                worker.wait(10)
        builder.join(60)
    assert Book([built[0]]).to_bytes() == Book([local_book(SLOW, 3)]).to_bytes()


def test_a_chunk_taken_over_skips_the_items_already_answered(redis_server: Any) -> None:
    """What a killed worker costs, step by step: its partial answers stay, and the worker
    that takes its chunk over after the lease lapses runs only the items left."""
    redis_server.flush()
    store = RedisJobStore(redis_server.url, ttl_s=TTL_S)
    work = Task("book.solve", {"anything": 1})
    items = [f"item{i}" for i in range(10)]
    job_id = store.create_work(work, items, 4, "book-build", ttl_s=TTL_S)
    first = store.take("victim")
    assert first is not None and first.work == work and first.chunk == 0
    assert first.items == [(0, "item0"), (1, "item1"), (2, "item2"), (3, "item3")]
    assert not store.complete(first, Completed([(0, b'"a"'), (1, b'"b"')], whole=False))
    # The victim dies: its lease lapses (made to lapse now rather than in 5 s).
    r = redis.Redis.from_url(redis_server.url)
    r.zadd(LEASES, {JobKeys(job_id).entry(0): 0})
    again = store.take("survivor")
    assert again is not None and again.chunk == 0 and again.attempt == 2
    assert again.items == [(2, "item2"), (3, "item3")]
    # A late duplicate answer (the victim was only slow) is not fed twice.
    assert store.complete(again, Completed([(1, b'"b"'), (2, b'"c"'), (3, b'"d"')]))
    assert store.feed(job_id, 0.1) == [(0, b'"a"'), (1, b'"b"'), (2, b'"c"'), (3, b'"d"')]
    assert store.feed(job_id, 0.1) == []
    store.forget(job_id)
    assert r.keys(f"kalah:v1:job:{job_id}:*") == []


def test_the_local_executor_gives_each_item_its_result_once() -> None:
    rules = RULES[1]
    local = local_book(rules, 3)
    params = {"rules": rules.to_json(), "databases": [], "tt_mb": 16, "value_only": False}
    keys = [local.data[i : i + 8].hex() for i in range(0, len(local.data), 12)]
    for executor in (LocalExecutor(1), LocalExecutor(2)):
        got = [
            pair for batch in executor.map(Task("book.solve", params), keys, 5) for pair in batch
        ]
        assert sorted(i for i, _ in got) == list(range(len(keys)))
        for i, record in got:
            assert (
                bytes.fromhex(keys[i]) + bytes.fromhex(record) == local.data[12 * i : 12 * i + 12]
            )
    # A runner with nothing to do keeps no book table. (Not asserted that the in-process run
    # left one: another test's idle runner thread in this process may release it first.)
    tasks.release()
    assert not book_build._ENGINE


def test_a_build_killed_hard_has_its_job_cancelled_once_its_poster_lease_lapses(
    redis_server: Any,
) -> None:
    redis_server.flush()
    store = RedisJobStore(redis_server.url, ttl_s=TTL_S)
    work = Task("book.solve", {})
    job_id = store.create_work(work, ["a", "b", "c"], 1, "book-build", ttl_s=TTL_S)
    running = store.take("w1")
    assert running is not None and store.renew(running)
    store.feed(job_id, 0.01)  # the poster reads: its lease goes on
    assert store.renew(running)
    # The poster is killed: its lease lapses (made to lapse now rather than in a minute).
    redis.Redis.from_url(redis_server.url).delete(JobKeys(job_id).poster)
    assert not store.renew(running)  # the runner stops after the item in hand
    assert store.take("w2") is None  # the chunks left are dropped
    status = store.status(job_id)
    assert status is not None and status.status == "cancelled"
    assert status.error == "its poster is gone"
    assert store.unfinished() == 0


def test_a_build_with_no_worker_stops_at_its_deadline_and_leaves_no_job(
    redis_server: Any,
) -> None:
    redis_server.flush()
    executor = RedisExecutor(redis_server.url, stream=quiet(), poll_s=0.2)
    rules = RULES[1]
    section = build_section(
        rules, DEPTH, [], stream=quiet(), until=time.time() + 1, executor=executor
    )
    assert len(section) == 0  # nothing solved, nothing derived
    assert redis.Redis.from_url(redis_server.url).keys("kalah:v1:job:*") == []
    assert RedisJobStore(redis_server.url, ttl_s=60).unfinished() == 0


def test_an_unreachable_redis_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness import free_port

    from kalah_core.cli import main

    url = f"redis://127.0.0.1:{free_port()}/0"
    out = tmp_path / "book.bin"
    argv = ["book", "build", "--houses", "3", "--seeds", "2", "--depth", "2", "-o", str(out)]
    assert main([*argv, "--redis-url", url]) == 2
    last = capsys.readouterr().err.splitlines()[-1]  # after the build's first line
    assert last.startswith(f"kalah book: error: the workers' Redis at {url}: ")
    assert "Connection refused" in last and not out.exists()


def test_a_deep_book_built_on_workers_equals_the_local_build(
    redis_server: Any, tmp_path: Path
) -> None:
    """The deep book's records (task kind deepbook.record) made by two kalah workers through
    Redis are those of a build in this process: a record is a pure function of its position."""
    from kalah_core.deepbook_build import DeepBudget, build_deep_section

    redis_server.flush()
    rules = Rules(houses=4, seeds=3, majority=True)
    budget = DeepBudget(estimate_nodes=1_500, bounds_nodes=1_500, tt_mb=4)
    workers = [start_worker(redis_server.url, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        executor = RedisExecutor(redis_server.url, stream=quiet(), poll_s=0.2)
        remote = build_deep_section(rules, 2, [budget], executor=executor, stream=quiet())
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(10)
    local = build_deep_section(rules, 2, [budget], stream=quiet())
    assert remote.records == local.records and len(local.records) == 1 + 4 + 15
