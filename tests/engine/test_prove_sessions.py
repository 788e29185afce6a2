"""Proofs in executor sessions: local processes that live for the whole session, a cancel that
interrupts a running test (no outcome), a process killed mid-test that costs that test only;
and the tests ahead (a test at its next caps on an idle worker), which shorten a proof's
schedule on two workers while it runs the same batches (the one-process run's).

The schedule is timed on :class:`kalah_core.tasks.ClockExecutor` (a clock of nodes, not of
seconds), so these are node counts, deterministic on any machine."""

from __future__ import annotations

import io
import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kalah_core import deepbook_refine
from kalah_core.deepbook import deep_key
from kalah_core.deepbook_refine import TEST_KIND, RefineBudget, leaf_test
from kalah_core.position import Position
from kalah_core.prove import prove_position
from kalah_core.rules import Rules
from kalah_core.tasks import ClockExecutor, LocalExecutor, Session, Task, _PoolSession, group_of

RULES = Rules(houses=4, seeds=4)
BUDGET = RefineBudget(first_nodes=2_000, tt_mb=8)


def work(rules: Rules) -> Task:
    return Task(TEST_KIND, {"rules": rules.to_json(), "tt_mb": 8, "databases": []})


def start_hex(rules: Rules) -> str:
    return deep_key(Position.start(rules), rules).hex()


def outcomes(path: Path, ahead: bool) -> dict[tuple[str, int, int, int], tuple[int | None, int]]:
    """The checkpoint's tests that batches asked for, or those run ahead, and their outcomes."""
    found = {}
    for line in path.read_text().splitlines():
        raw = json.loads(line)
        if raw.get("ahead", False) == ahead:
            test = (raw["key"], raw["house"], raw["beta"], raw["cap"])
            found[test] = (raw["bound"], raw["nodes"])
    return found


def clock_proof(workers: int, checkpoint: Path) -> tuple[tuple[int, int, int, int], int]:
    executor = ClockExecutor(workers, lambda result: int(result[1]))
    proof = prove_position(
        RULES,
        Position.start(RULES),
        BUDGET,
        checkpoint=checkpoint,
        stream=io.StringIO(),
        executor=executor,
        warm=False,  # the clock's workers are this one process: one table for all of them
    )
    assert executor.last is not None
    return (proof.lower, proof.upper, proof.tests, proof.nodes), executor.last.now


def test_tests_ahead_shorten_a_proof_on_two_workers_and_change_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, one_ticks = clock_proof(1, tmp_path / "1.jsonl")
    two, two_ticks = clock_proof(2, tmp_path / "2.jsonl")
    monkeypatch.setattr(deepbook_refine, "AHEAD_CAPS", 0)
    plain, plain_ticks = clock_proof(2, tmp_path / "plain.jsonl")
    assert one == two == plain and one[:2] == (2, 2)  # Kalah(4,4): +2, the same tests
    assert two_ticks < plain_ticks < one_ticks
    asked = outcomes(tmp_path / "1.jsonl", False)
    assert asked == outcomes(tmp_path / "2.jsonl", False)  # the same batches
    assert not outcomes(tmp_path / "1.jsonl", True)
    ahead = outcomes(tmp_path / "2.jsonl", True)
    assert ahead and all(asked[test] == ahead[test] for test in asked.keys() & ahead.keys())


def test_a_local_session_keeps_its_processes_and_answers_like_this_process() -> None:
    rules = Rules(houses=4, seeds=3)
    items = [[start_hex(rules), house, beta, 3_000] for house in (1, 2, 3, 4) for beta in (0, 2)]
    session = _PoolSession(work(rules), 2)
    try:
        pids = [w.process.pid for w in session.workers]
        for index, item in enumerate(items):
            session.submit(index, item)
        got: dict[int, object] = {}
        while len(got) < len(items):
            got.update(session.wait(5.0))
        assert [w.process.pid for w in session.workers] == pids
    finally:
        session.close()
    for index, (key_hex, house, beta, cap) in enumerate(items):
        assert got[index] == list(leaf_test(rules, (key_hex, house, beta, cap), 8, ()))


def test_a_cancel_interrupts_the_running_test_and_its_process_goes_on() -> None:
    rules = Rules(houses=6, seeds=4)
    endless = [start_hex(rules), 3, 9, 10**12]  # minutes of search, far past the suite's time
    small = [start_hex(rules), 1, 30, 2_000]
    session = _PoolSession(work(rules), 1)
    try:
        pid = session.workers[0].process.pid
        session.submit(0, endless)
        session.wait(0.5)  # under way
        session.cancel(0)
        assert session.running() == 0
        session.submit(1, small)
        got: dict[int, object] = {}
        while 1 not in got:
            got.update(session.wait(5.0))
        assert 0 not in got and session.workers[0].process.pid == pid
    finally:
        session.close()
    assert got[1] == list(leaf_test(rules, (small[0], small[1], small[2], small[3]), 8, ()))


def test_a_process_killed_mid_test_costs_that_test_only() -> None:
    rules = Rules(houses=5, seeds=4)
    item = [start_hex(rules), 2, 11, 1_000_000]
    session = _PoolSession(work(rules), 1)
    try:
        victim = session.workers[0].process.pid
        assert victim is not None
        session.submit(0, item)
        session.wait(0.2)
        os.kill(victim, signal.SIGKILL)
        got: dict[int, object] = {}
        while 0 not in got:
            got.update(session.wait(5.0))
        assert session.workers[0].process.pid != victim
    finally:
        session.close()
    assert got[0] == list(leaf_test(rules, (item[0], item[1], item[2], item[3]), 8, ()))


def test_one_local_worker_runs_in_this_process() -> None:
    with LocalExecutor(1).session(work(RULES)) as session:
        session.submit(7, [start_hex(RULES), 1, 0, 2_000])
        assert session.capacity == 1 and session.running() == 1
        [(index, result)] = session.wait(0.0)
    assert index == 7 and result == list(leaf_test(RULES, (start_hex(RULES), 1, 0, 2_000), 8, ()))


def test_a_checkpoint_with_tests_ahead_resumes_on_one_worker_without_a_search(
    tmp_path: Path,
) -> None:
    path = tmp_path / "2.jsonl"
    two, _ = clock_proof(2, path)
    assert outcomes(path, True)  # it holds tests ahead
    out = io.StringIO()
    proof = prove_position(RULES, Position.start(RULES), BUDGET, checkpoint=path, stream=out)
    assert (proof.lower, proof.upper, proof.tests, proof.nodes) == two
    assert proof.searched == 0 and not out.getvalue()  # no test run again


def test_a_warm_tests_move_stays_with_the_process_whose_table_holds_its_tree() -> None:
    """A warm table holds the tree of the moves its process tested: their next tests go there,
    and an idle process waits rather than take a busy one's heavy move, whose tree it would
    search again from nothing; a light move moves (a hint only: any process answers any
    test alike in what it proves). Cold tests have no group: any process takes any."""
    rules = Rules(houses=4, seeds=3)
    key = start_hex(rules)
    warm = Task(TEST_KIND, {**work(rules).params, "warm": "run"})
    session = _PoolSession(warm, 2)
    try:

        def group(house: int) -> str:
            return json.dumps([key, house])

        session.home = {group(3): 0, group(1): 1}
        session.weight = {group(3): 60.0, group(1): 60.0}
        session.workers[1].index = 99  # busy
        session.todo.extend([(0, [key, 1, 0, 10]), (1, [key, 2, 0, 10]), (2, [key, 3, 0, 10])])
        assert session._take(0) == (2, [key, 3, 0, 10])  # its own move's
        assert session._take(0) == (1, [key, 2, 0, 10])  # then a move no process ran
        assert session.home[group(2)] == 0
        assert session._take(0) is None  # not the busy process's heavy move: it waits
        session.weight[group(1)] = 1.0
        assert session._take(0) == (0, [key, 1, 0, 10])  # a light one moves here
        assert session.home[group(1)] == 0
    finally:
        session.workers[1].index = None
        session.close()
    assert group_of(warm, [key, 1, 0, 10]) == group(1)
    assert group_of(work(rules), [key, 1, 0, 10]) is None  # a cold test: any process


def test_a_warm_proof_on_two_processes_one_killed_proves_the_value_by_facts(
    tmp_path: Path,
) -> None:
    """Two local processes keeping their tables, one SIGKILLed in the middle of the proof (its
    replacement starts on an empty table): the value is the one-process solve's, and every
    test decided in the checkpoint has the verdict a test without a cap on an emptied table
    gives (a warm table's outcome within a cap depends on what the process ran before; what
    it proves does not)."""
    from kalah_core.solver import Engine

    killed: list[int] = []

    class Killing(LocalExecutor):
        @contextmanager
        def _session(self, work: Task) -> Iterator[Session]:
            with super()._session(work) as session:
                assert isinstance(session, _PoolSession)
                wait = session.wait

                def wait_and_kill(timeout: float) -> list[tuple[int, object]]:
                    done = wait(timeout)
                    busy = [w for w in session.workers if w.index is not None]
                    if done and busy and not killed and len(outcomes_so_far) >= 4:
                        pid = busy[0].process.pid
                        assert pid is not None
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    outcomes_so_far.extend(done)
                    return done

                session.wait = wait_and_kill  # type: ignore[method-assign]
                yield session

    outcomes_so_far: list[object] = []
    rules = Rules(houses=5, seeds=4)
    start = Position.start(rules)
    path = tmp_path / "warm.jsonl"
    budget = RefineBudget(first_nodes=2_000, tt_mb=8)
    proof = prove_position(
        rules, start, budget, checkpoint=path, stream=io.StringIO(), executor=Killing(2)
    )
    assert killed, "no process was busy to be killed"
    assert not outcomes(path, True)  # warm: no test ahead (it would search a tree again)
    assert proof.exact and proof.lower == Engine(tt_mb=8).analyse(start, rules).value == 10
    decided = 0
    for (key_hex, house, beta, _), (bound, _) in outcomes(path, False).items():
        if bound is None:
            continue
        truth, _ = leaf_test(rules, (key_hex, house, beta, 10**12), 8, ())
        assert truth is not None and (bound >= beta) == (truth >= beta)
        decided += 1
    assert decided > 5
