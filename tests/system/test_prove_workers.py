"""Proofs on workers: ``kalah prove --cold`` and ``kalah book refine`` run the same batches of
tests with the same outcomes (their checkpoints equal, line for line, once sorted and the tests
run ahead set aside) on 1 and 2 local processes; the tests ahead (a test of a batch at its next
caps, on a worker the batch leaves idle) agree with the others on every test they share: a
cold outcome is a pure function of its test. ``kalah prove`` (its workers' tables kept warm)
proves the same value on 1 and 2 local processes and on ``kalah worker`` processes through a
real Redis, one of them killed with SIGKILL in the middle of a test, and its runs give every
test they both decided the same verdict (within a cap, a warm outcome depends on the tests its
worker ran before; what it proves does not). Through Redis, a heavy move's tests are left for
the worker whose table holds its tree.

It belongs beside tests/system/test_batch_workers.py (whose ``start_worker`` it uses)."""

from __future__ import annotations

import io
import json
import shutil
import signal
import threading
import time
from pathlib import Path

import harness
import pytest
import redis
from test_batch_workers import start_worker  # beside it: tests/system

from kalah_core.cli import main
from kalah_core.deepbook import DeepBook
from kalah_core.deepbook_build import DeepBudget, build_deep_section
from kalah_core.deepbook_refine import TEST_KIND
from kalah_core.rules import Rules
from kalah_core.tasks import Task
from kalah_service.jobs.redis_layout import HOME_BELL_PREFIX, TOKENS
from kalah_service.jobs.store import Completed
from kalah_service.jobs.work import RedisExecutor, RedisSession

ROOT = Path(__file__).resolve().parents[1]


def outcomes(path: Path) -> list[str]:
    """A checkpoint's tests that batches asked for and their outcomes, in one order whatever
    order they came in (the tests ahead set aside)."""
    return sorted(line for line in path.read_text().splitlines() if '"ahead"' not in line)


def agree(*paths: Path) -> bool:
    """The checkpoints, tests ahead included, give every test they share the same outcome."""
    found: dict[tuple[str, str, int, int, int], tuple[int | None, int]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            raw = json.loads(line)
            test = (raw["rules"], raw["key"], raw["house"], raw["beta"], raw["cap"])
            if found.setdefault(test, (raw["bound"], raw["nodes"])) != (raw["bound"], raw["nodes"]):
                return False
    return True


def verdicts_agree(*paths: Path) -> bool:
    """The checkpoints give every test they share and decided the same verdict (bound >= beta
    or not; the bounds themselves may differ, each proven)."""
    found: dict[tuple[str, str, int, int, int], bool] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            raw = json.loads(line)
            if raw["bound"] is None:
                continue
            test = (raw["rules"], raw["key"], raw["house"], raw["beta"], raw["cap"])
            if found.setdefault(test, raw["bound"] >= raw["beta"]) != (raw["bound"] >= raw["beta"]):
                return False
    return True


def prove(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["prove", *argv, "--json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_a_cold_proof_on_two_local_workers_runs_the_tests_of_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = ["start", "--houses", "4", "--seeds", "4", "--tt-mb", "8", "--first-mnodes", "0.002"]
    board += ["--cold"]
    proofs = [
        prove([*board, "--workers", str(w), "--checkpoint", str(tmp_path / f"{w}.jsonl")], capsys)
        for w in (1, 2)
    ]
    assert proofs[0]["exact"] is True and proofs[0]["value"] == 2  # Kalah(4,4)
    keep = ("value", "exact", "tests", "nodes")
    first, second = ({k: p[k] for k in keep} for p in proofs)
    assert first == second
    assert outcomes(tmp_path / "1.jsonl") == outcomes(tmp_path / "2.jsonl")
    assert agree(tmp_path / "1.jsonl", tmp_path / "2.jsonl")


def test_a_warm_proof_on_two_local_workers_proves_the_value_of_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = ["start", "--houses", "5", "--seeds", "4", "--tt-mb", "8", "--first-mnodes", "0.002"]
    paths = [tmp_path / f"{w}.jsonl" for w in (1, 2, 3)]
    proofs = [
        prove([*board, "--workers", str(w), "--checkpoint", str(path)], capsys)
        for w, path in zip((1, 2, 1), paths, strict=True)
    ]
    cold = prove([*board, "--cold"], capsys)
    assert all(p["exact"] is True and p["value"] == 10 for p in proofs)  # Kalah(5,4)
    assert all(p["nodes"] < cold["nodes"] for p in proofs)  # warm tables reuse their entries
    assert proofs[0]["nodes"] == proofs[2]["nodes"]  # one process: the same tests
    assert outcomes(paths[0]) == outcomes(paths[2])
    assert verdicts_agree(*paths)


def test_a_refinement_on_two_local_workers_runs_the_tests_of_one(tmp_path: Path) -> None:
    rules = Rules(houses=5, seeds=3, capture="always")
    budget = DeepBudget(estimate_nodes=3_000, bounds_nodes=3_000, tt_mb=4)
    section = build_deep_section(rules, 2, [budget], stream=io.StringIO())
    books = []
    for w in (1, 2):
        path = tmp_path / f"deep{w}.xz"
        DeepBook([section]).save(path)
        args = ["book", "refine", "--rules", "piet-hein", "--houses", "5", "--seeds", "3"]
        args += ["--first-mnodes", "0.002", "--total-mnodes", "0.4", "--tt-mb", "4"]
        args += ["-o", str(path), "--checkpoint", str(tmp_path / f"{w}.jsonl")]
        assert main([*args, "--workers", str(w), "--json"]) == 0
        books.append(DeepBook.load(path).sections[rules.key].records)
    assert books[0] == books[1] and books[0] != section.records
    assert outcomes(tmp_path / "1.jsonl") == outcomes(tmp_path / "2.jsonl")
    assert agree(tmp_path / "1.jsonl", tmp_path / "2.jsonl")


@pytest.mark.parametrize(
    "cold,threads", [(True, 1), (False, 1), (False, 2)], ids=["cold", "warm", "warm-threads"]
)
def test_a_proof_on_kalah_workers_survives_one_killed_mid_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cold: bool, threads: int
) -> None:
    """With ``--threads 2`` (in the task's parameters: tests/engine/test_prove.py) the
    workers' tests run on two threads each and prove the same."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
    board = ["start", "--houses", "5", "--seeds", "4", "--tt-mb", "16", "--first-mnodes", "0.01"]
    board += ["--cold"] if cold else ["--threads", str(threads)]
    local = prove([*board, "--checkpoint", str(tmp_path / "local.jsonl")], capsys)
    server = harness.RedisServer(harness.free_port())
    server.start()
    r = redis.Redis.from_url(server.url)
    workers = [start_worker(server.url, tmp_path / f"worker{i}.log") for i in range(2)]
    victim = workers[0]
    killed: list[bool] = []

    def kill_mid_test() -> None:  # the victim holding a test: kill it
        while not killed:
            if any(f":{victim.pid}/" in h.decode() for h in r.hgetall(TOKENS).values()):
                victim.send_signal(signal.SIGKILL)
                victim.wait(10)
                killed.append(True)
            time.sleep(0.002)

    killer = threading.Thread(target=kill_mid_test, daemon=True)
    ckpt = tmp_path / "workers.jsonl"
    try:
        killer.start()
        # The survivor takes the victim's test over once its lease lapses.
        remote = prove([*board, "--redis-url", server.url, "--checkpoint", str(ckpt)], capsys)
        assert killed, "the victim never held a test"
        assert workers[1].poll() is None
    finally:
        killed.append(False)  # stops the killer
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
                worker.wait(10)
        killer.join(10)
        server.close()
    assert remote["value"] == local["value"] == 10  # Kalah(5,4)
    assert verdicts_agree(ckpt, tmp_path / "local.jsonl")
    if cold:  # the same batches: the same tests, outcomes and nodes
        assert (remote["tests"], remote["nodes"]) == (local["tests"], local["nodes"])
        assert outcomes(ckpt) == outcomes(tmp_path / "local.jsonl")
        assert agree(ckpt, tmp_path / "local.jsonl")


def test_a_heavy_moves_tests_are_left_for_the_worker_whose_table_holds_its_tree(
    redis_server: harness.RedisServer,
) -> None:
    """Affinity through Redis, step by step (the workers' takes made by hand): a move's next
    test is left for the worker that ran its tests long enough, and no other takes it; a
    lighter move's goes to anyone; a test left for a worker that stops beating goes back to
    everyone."""
    redis_server.flush()
    executor = RedisExecutor(redis_server.url, stream=io.StringIO(), poll_s=0.1)
    store = executor.store
    r = redis.Redis.from_url(redis_server.url)
    work = Task(TEST_KIND, {"warm": "run"})  # its groups: a warm test's move
    a, b = "host-a:1/token-a", "host-b:2/token-b"
    store.beat("host-a:1")
    store.beat("host-b:2")

    def run(worker: str, index: int, item: list[object]) -> None:
        lease = store.take(worker)
        assert lease is not None and lease.items == [(0, item)]
        assert store.complete(lease, Completed([(0, b"[null, 7]")]))
        assert session.wait(5) == [(index, [None, 7])]

    with executor.session(work) as session:
        assert isinstance(session, RedisSession)
        session.steal_below_s = 0.0  # every run counts as heavy
        move, other = ["00ff", 1], ["00ff", 2]
        session.submit(0, [*move, 5, 1000])
        run(a, 0, [*move, 5, 1000])
        session.submit(1, [*move, 6, 2000])  # left for a
        assert r.llen(HOME_BELL_PREFIX + a) == 1  # a's own bell rang, not everyone's
        assert store.take(b) is None
        run(a, 1, [*move, 6, 2000])
        session.submit(2, [*other, 5, 1000])  # a move no worker ran: anyone's
        run(b, 2, [*other, 5, 1000])
        session.steal_below_s = 1e9  # now too light to wait for its worker
        session.submit(3, [*move, 7, 1000])
        run(b, 3, [*move, 7, 1000])
        session.steal_below_s = 0.0
        session.submit(4, [*move, 8, 1000])  # b ran it last: left for b
        assert store.take(a) is None
        store.leave("host-b:2")  # b stops beating before it takes the test
        assert session.wait(0.2) == []  # sees it, and posts the test to everyone
        run(a, 4, [*move, 8, 1000])
