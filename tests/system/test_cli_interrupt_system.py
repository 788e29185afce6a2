"""The system tests of tests/engine/test_cli_interrupt.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_interrupt import DEADLINE_S, _interrupt_when_running, _solve

from kalah_core.deepbook import SHIPPED, DeepBook, deep_key, shipped
from kalah_core.position import Position
from kalah_core.rules import Rules


def test_sigint_prints_the_bounds_proven_so_far(tmp_path: Path) -> None:
    process = _solve(tmp_path=tmp_path)
    out, err = _interrupt_when_running(process)
    assert process.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "proven [" in err and "nodes/s" in err  # the progress line
    assert out.startswith("interrupted: what is proven so far\n")
    assert "proven between" in out


def test_sigint_with_json_is_the_answer_so_far_not_exact(tmp_path: Path) -> None:
    process = _solve("--json", tmp_path=tmp_path)
    out, err = _interrupt_when_running(process)
    assert process.returncode == 130
    assert "Traceback" not in err
    answer = json.loads(out)
    assert answer["interrupted"] is True and answer["exact"] is False
    assert answer["lower"] <= answer["value"] <= answer["upper"]
    assert answer["nodes"] > 0 and len(answer["moves"]) == 6


def test_ctrl_c_stops_a_proof_on_workers_and_keeps_its_checkpoint(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) ends ``kalah prove``
    on local worker processes: exit 130, a line saying so and no traceback from the parent
    or its workers, every worker gone, and the tests done kept in the checkpoint."""
    checkpoint = tmp_path / "proof.ckpt"
    command = [sys.executable, "-m", "kalah_core", "prove", "start", "--houses", "6"]
    command += ["--seeds", "4", "--workers", "2", "--tt-mb", "16", "--no-book"]
    process = subprocess.Popen(
        [*command, "--checkpoint", str(checkpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "KALAH_EGDB_PATH": "off"},
        cwd=tmp_path,
        start_new_session=True,  # its own group, so that the signal reaches only it
    )
    for _ in range(int(DEADLINE_S / 0.1)):  # the first test's outcome, about a second in
        if checkpoint.exists() and checkpoint.read_text().count("\n") >= 1:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    assert process.poll() is None  # Kalah(6,4) takes minutes: still running
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == 130, err
    assert "kalah prove: interrupted" in err.decode()
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err
    assert _group_ends(process.pid), "a worker outlived the command"
    assert checkpoint.read_text().count("\n") >= 1


def _group_ends(group: int) -> bool:
    """Whether every process of ``group`` ends within the deadline (a worker ended as its
    command exits may stay a zombie a moment, until init reaps it)."""
    for _ in range(int(DEADLINE_S / 0.1)):
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_refinement_as_its_deadline_does(tmp_path: Path, signum: int) -> None:
    """SIGTERM (a job stopped) or Ctrl-C ends ``kalah book refine`` as ``--minutes`` does: exit
    0, the book written with the run's pass and the bounds it had, the checkpoint kept, no
    worker left. piet-hein's start without a database takes hours: the run is still going."""
    checkpoint, book = tmp_path / "refine.ckpt", tmp_path / "deep.json.xz"
    command = [sys.executable, "-m", "kalah_core", "book", "refine", "--rules", "piet-hein"]
    command += ["--input", str(SHIPPED), "-o", str(book)]
    command += ["--tt-mb", "16", "--checkpoint", str(checkpoint)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "KALAH_EGDB_PATH": "off"},
        cwd=tmp_path,
        start_new_session=True,
    )
    for _ in range(int(DEADLINE_S / 0.1)):  # the first test's outcome
        if checkpoint.exists() and checkpoint.read_text().count("\n") >= 1:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    assert process.poll() is None
    os.killpg(process.pid, signum)
    out, err = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == 0, err
    assert f"{signal.Signals(signum).name}: stopping" in err.decode()
    assert b"Traceback" not in err
    assert _group_ends(process.pid), "a worker outlived the command"
    rules = Rules.preset("piet-hein")
    shipped_start = shipped().sections[rules.key].records[deep_key(Position.start(rules), rules)]
    refined = DeepBook.load(book).sections[rules.key]
    start = refined.records[deep_key(Position.start(rules), rules)]
    assert shipped_start.lower <= start.lower <= start.upper <= shipped_start.upper
    last = refined.build["refine"][-1]
    assert last["searched"] > 0 and last["start"]["after"] == [start.lower, start.upper]
    assert b"the start proven between" in out
    assert checkpoint.read_text().count("\n") >= 1
