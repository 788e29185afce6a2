"""``kalah prove``: a position's value by null-window tests on an executor. On small boards it
equals the plain minimax of kalah_core.reference and ``kalah solve``; ``--at-least`` and
``--at-most`` decide both sides of the value; a checkpoint replays without a search."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from kalah_core import reference
from kalah_core.cli import main
from kalah_core.deepbook_refine import RefineBudget
from kalah_core.game import legal_moves
from kalah_core.position import Position
from kalah_core.prove import prove_position
from kalah_core.rules import Rules
from kalah_core.solver import Engine

BUDGET = RefineBudget(first_nodes=500, tt_mb=4)
"""A first cap far below these boards' solves: the proofs take several rounds of caps."""
SMALL = [
    Rules(houses=3, seeds=3),
    Rules(houses=3, seeds=3, capture="always"),
    Rules(houses=3, seeds=3, remaining="empty-side"),
    Rules(houses=3, seeds=3, end="mover-empty"),
    Rules(houses=3, seeds=3, majority=True),
]


def quiet() -> io.StringIO:
    return io.StringIO()


@pytest.mark.parametrize("rules", SMALL, ids=lambda r: r.key)
def test_the_start_proven_equals_the_reference_minimax(rules: Rules) -> None:
    start = Position.start(rules)
    proof = prove_position(rules, start, BUDGET, stream=quiet())
    assert proof.exact and proof.holds is True
    assert proof.lower == reference.value(start, rules)
    assert proof.tests > len(legal_moves(start, rules))  # more than one test a move


@pytest.mark.parametrize("houses,seeds", [(4, 3), (4, 4), (5, 3)])
def test_prove_equals_solve_on_the_command_line(
    houses: int, seeds: int, capsys: pytest.CaptureFixture[str]
) -> None:
    board = ["start", "--houses", str(houses), "--seeds", str(seeds), "--tt-mb", "8", "--json"]
    assert main(["solve", *board]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert solved["exact"]
    assert main(["prove", *board, "--first-mnodes", "0.001"]) == 0
    proved = json.loads(capsys.readouterr().out)
    assert proved["value"] == solved["value"] and proved["exact"] is True
    assert "lower" not in proved and proved["tests"] > 0 and proved["nodes"] > 0


def test_a_bound_is_decided_on_both_sides_of_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = Rules(houses=4, seeds=3)
    value = Engine(tt_mb=4).analyse(Position.start(rules), rules).value
    board = ["prove", "start", "--houses", "4", "--seeds", "3", "--tt-mb", "4", "--json"]
    board += ["--first-mnodes", "0.0005"]
    # The values here are all of one parity: the nearest others are value - 2 and value + 2.
    for flag, t, holds in [
        ("--at-least", value, True),
        ("--at-least", value + 2, False),
        ("--at-least", value + 1, False),
        ("--at-most", value, True),
        ("--at-most", value - 2, False),
        ("--at-most", value - 1, False),
    ]:
        assert main([*board, flag, str(t)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["claim"]["holds"] is holds, (flag, t, out)
        key = "at_least" if flag == "--at-least" else "at_most"
        assert out["claim"][key] == t
        lower = out.get("lower", out.get("value"))
        upper = out.get("upper", out.get("value"))
        assert lower <= value <= upper  # the bounds proven on the way hold the value
        if holds and flag == "--at-least":
            assert lower >= t
        elif holds:
            assert upper <= t
        elif flag == "--at-least":
            assert upper < t
        else:
            assert lower > t


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_checkpoint_replays_without_a_search(tmp_path: Path, warm: bool) -> None:
    rules = Rules(houses=4, seeds=3)
    start = Position.start(rules)
    path = tmp_path / "prove.jsonl"
    first = prove_position(rules, start, BUDGET, checkpoint=path, stream=quiet(), warm=warm)
    lines = path.read_text().splitlines()
    # Cold, every test read is a line; warm, an AND node's other moves keep the first cap for
    # three rounds, so their lines are read again.
    assert len(lines) >= (1 if warm else first.tests) and first.tests > 0
    assert all(json.loads(line)["rules"] == rules.key for line in lines)
    again = prove_position(rules, start, BUDGET, checkpoint=path, stream=quiet(), warm=warm)
    assert (again.lower, again.upper, again.tests, again.nodes) == (
        first.lower,
        first.upper,
        first.tests,
        first.nodes,
    )
    assert again.searched == 0 and len(path.read_text().splitlines()) == len(lines)
    # A checkpoint cut short (a run killed): the proof goes on from the tests it holds.
    path.write_text("\n".join(lines[: len(lines) // 2]) + "\n" + lines[len(lines) // 2][:9])
    resumed = prove_position(rules, start, BUDGET, checkpoint=path, stream=quiet(), warm=warm)
    assert (resumed.lower, resumed.upper) == (first.lower, first.upper)
    assert 0 < resumed.searched < first.searched
    if not warm:  # the resumed run's tables start empty: a warm one's later tests may differ
        assert resumed.nodes == first.nodes


def test_a_warm_table_proves_the_same_value_in_fewer_nodes() -> None:
    """One process, so the warm run is deterministic too: its tests reuse the proven entries
    the earlier tests left, where the cold run searches each test from an emptied table."""
    rules = Rules(houses=5, seeds=4)
    start = Position.start(rules)
    budget = RefineBudget(first_nodes=2_000, tt_mb=8)
    warm = prove_position(rules, start, budget, stream=quiet())
    cold = prove_position(rules, start, budget, stream=quiet(), warm=False)
    solved = Engine(tt_mb=8).analyse(start, rules, prove="value")
    assert warm.exact and cold.exact and warm.lower == cold.lower == solved.value == 10
    assert warm.nodes < cold.nodes and warm.searched < cold.searched


def test_a_run_on_the_workers_can_start_from_a_thread_that_is_not_main() -> None:
    """``kalah prove --redis-url`` and ``book refine`` cancel their job on SIGTERM, but only
    the main thread may set a handler: started from another thread (a program embedding the
    command), the run still starts, and the handler it had stays."""
    import argparse
    import signal
    import threading

    from kalah_core.cli.cmd_book import test_run

    args = argparse.Namespace(
        workers=1, redis_url="redis://127.0.0.1:1/0", minutes=None, checkpoint=None
    )
    before = signal.getsignal(signal.SIGTERM)
    found: dict[str, object] = {}

    def run() -> None:
        try:
            found["run"] = test_run(args)
        except Exception as error:  # reported by the assertion below
            found["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert "error" not in found, found
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_move_new_to_a_warm_process_is_estimated_before_a_test_at_a_grown_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A resumed run, or a move another worker ran so far: its first test in this process at a
    cap past the first counts half that cap as spent, so the deep estimate comes before the
    test instead of after a whole cap searched cold. At the first cap nothing changes."""
    from kalah_core import deepbook_refine
    from kalah_core.deepbook import deep_key
    from kalah_core.deepbook_refine import leaf_test

    monkeypatch.setattr(deepbook_refine, "DEEPEN_AFTER", 1_000)
    estimated: list[int] = []
    aside = Engine.deep_estimate_aside

    def spy(self: Engine, position: Position, rules: Rules, spent: int) -> int | None:
        estimated.append(spent)
        return aside(self, position, rules, spent)

    monkeypatch.setattr(Engine, "deep_estimate_aside", spy)
    rules = Rules(houses=4, seeds=4)
    key = deep_key(Position.start(rules), rules).hex()
    first, second = legal_moves(Position.start(rules), rules)[:2]
    leaf_test(rules, (key, int(first), 0, 1_000), 4, (), warm="run-a")
    assert estimated == []
    leaf_test(rules, (key, int(second), 0, 8_000), 4, (), warm="run-a")
    assert estimated == [4_000]
    # Another run's token starts afresh: the same move at the first cap is not estimated.
    leaf_test(rules, (key, int(second), 0, 1_000), 4, (), warm="run-b")
    assert estimated == [4_000]


def test_a_warm_proof_takes_a_verdict_decided_at_another_cap(tmp_path: Path) -> None:
    """Warm, a move's cap changes from pass to pass (an AND node's likeliest-to-fail is its
    first undecided move), and a test decided at one cap is a fact at any: a checkpoint whose
    decided tests all carry other caps replays without a search. Cold, where each test is a
    function of its cap, the same checkpoint is searched again."""
    rules = Rules(houses=4, seeds=3)
    start = Position.start(rules)
    path = tmp_path / "prove.jsonl"
    first = prove_position(rules, start, BUDGET, checkpoint=path, stream=quiet())
    moved = []
    for line in path.read_text().splitlines():
        raw = json.loads(line)
        if raw["bound"] is not None:
            raw["cap"] *= 4
        moved.append(json.dumps(raw))
    for warm in (True, False):
        path.write_text("\n".join(moved) + "\n")
        again = prove_position(rules, start, BUDGET, checkpoint=path, stream=quiet(), warm=warm)
        assert (again.lower, again.upper) == (first.lower, first.upper)
        assert (again.searched == 0) is warm


def test_a_warm_proofs_tests_on_two_threads_share_its_table_and_prove_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--threads``: each test on two threads sharing the process's warm table (one process
    using a machine's cores on one proof); the verdicts are facts all the same. Cold tests
    are functions of their caps, which threads would not keep: refused."""
    from kalah_core.deepbook_build import _ENGINES
    from kalah_core.errors import KalahError

    rules = Rules(houses=5, seeds=4)
    start = Position.start(rules)
    budget = RefineBudget(first_nodes=2_000, tt_mb=8, threads=2)
    proof = prove_position(rules, start, budget, stream=quiet())
    assert proof.exact and proof.lower == 10
    assert [engine.threads for engine in _ENGINES.values()] == [2]
    with pytest.raises(KalahError, match="cold"):
        prove_position(rules, start, budget, stream=quiet(), warm=False)
    board = ["start", "--houses", "4", "--seeds", "3", "--tt-mb", "8", "--json"]
    assert main(["prove", *board, "--threads", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] is True
    assert main(["prove", *board, "--threads", "2", "--cold"]) != 0
    assert "--cold" in capsys.readouterr().err


def test_a_workers_test_runs_on_the_threads_its_task_asks_at_most_its_cores() -> None:
    """What a ``kalah worker`` runs for ``kalah prove --threads``: the task's parameters
    carry the threads, and a process uses at most the cores it may run on."""
    from kalah_core.deepbook import deep_key
    from kalah_core.deepbook_build import _ENGINES
    from kalah_core.deepbook_refine import test_task

    rules = Rules(houses=4, seeds=3)
    key = deep_key(Position.start(rules), rules).hex()
    params = {"rules": rules.to_json(), "tt_mb": 4, "databases": [], "warm": "run-t"}
    for asked in (2, 64):
        [outcome] = test_task({**params, "threads": asked}, [[key, 1, 0, 100_000]])
        assert outcome[0] is not None
        cores = len(os.sched_getaffinity(0))
        assert [engine.threads for engine in _ENGINES.values()] == [min(asked, cores)]
