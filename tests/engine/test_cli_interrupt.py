"""Solving never hangs silently: ``kalah solve`` shows its proven bounds as they narrow and
stops on Ctrl-C (SIGINT) within a second, printing what is proven so far, with no traceback;
``Engine.interrupt`` stops an analysis running on another thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kalah_core import budget
from kalah_core.position import Position
from kalah_core.results import Analysis
from kalah_core.rules import Rules
from kalah_core.solver import Engine

HARD = "666666-0-666666-0-s"  # Kalah(6,6)'s start: a proof takes weeks
DEADLINE_S = 120.0  # generous: the machine may be loaded; the claim is checked by the events


def analyse_in_background(engine: Engine, rules: Rules) -> tuple[threading.Event, list[Analysis]]:
    """An unbounded analysis of the start on a thread: set when it returns, and its answer."""
    done = threading.Event()
    answers: list[Analysis] = []

    def run() -> None:
        answers.append(engine.analyse(Position.start(rules), rules, prove="optimal"))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, answers


def test_interrupt_stops_an_unbounded_analysis_with_its_bounds() -> None:
    rules = Rules.preset("kalah").replace(seeds=6)
    engine = Engine(tt_mb=16)
    done, answers = analyse_in_background(engine, rules)
    # Wait until the proof runs (progress known and nodes counted), then interrupt.
    started = threading.Event()
    for _ in range(int(DEADLINE_S / 0.05)):
        progress = engine.progress()
        if progress is not None and progress[2] > 100_000:
            started.set()
            break
        done.wait(0.05)
    assert started.is_set() and not done.is_set()
    engine.interrupt()
    assert done.wait(DEADLINE_S)
    analysis = answers[0]
    assert not analysis.exact
    assert analysis.lower <= analysis.value <= analysis.upper
    assert progress is not None and analysis.lower >= progress[0] and analysis.upper <= progress[1]
    # The next analysis is not interrupted.
    small = Rules.preset("kalah").replace(houses=4, seeds=2)
    assert engine.analyse(Position.start(small), small).exact


def test_an_unbounded_analysis_narrows_its_bounds_while_the_proof_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unbounded solve alternates the proof with proven bounds in rounds (the first
    ENDLESS_FIRST_MS, here shortened to 50 ms), so its bounds narrow long before the proof
    could end: at Kalah(6,6)'s start MTD(f)'s first test alone takes hours."""
    monkeypatch.setattr(budget, "ENDLESS_FIRST_MS", 50.0)
    rules = Rules.preset("kalah").replace(seeds=6)
    engine = Engine(tt_mb=16)
    engine.unbounded_rounds = True  # as kalah solve on a terminal
    done, answers = analyse_in_background(engine, rules)
    # The trivial bounds are about 142 wide (the stores of the first sowing); 1 s of rounds on
    # one core proves about [-54, +60].
    narrowed = None
    for _ in range(int(DEADLINE_S / 0.05)):
        progress = engine.progress()
        if progress is not None and progress[1] - progress[0] <= 120:
            narrowed = progress
            break
        done.wait(0.05)
    engine.interrupt()
    assert done.wait(DEADLINE_S)
    assert narrowed is not None, "the bounds never narrowed"
    analysis = answers[0]
    assert not analysis.exact
    assert analysis.lower >= narrowed[0] and analysis.upper <= narrowed[1]
    assert analysis.lower <= analysis.value <= analysis.upper


def _solve(*options: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KALAH_EGDB_PATH": "off", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "kalah_core", "solve", "--progress", "--tt-mb", "16"]
    return subprocess.Popen(
        [*command, "--best-only", *options, HARD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )


def _interrupt_when_running(process: subprocess.Popen[bytes]) -> tuple[str, str]:
    """Send SIGINT once the progress line shows nodes searched (about 5 s in: progress lines
    come every 0.5 s, and the tenth is awaited), then wait for the exit."""
    assert process.stderr is not None
    lines = 0
    seen = b""
    while lines < 10:
        chunk = process.stderr.read(1)  # bytes: text mode would turn each \r into \n
        assert chunk, f"kalah solve ended early: {seen!r}"
        seen += chunk
        lines += chunk == b"\r"
    process.send_signal(signal.SIGINT)
    exited = threading.Event()
    threading.Thread(target=lambda: (process.wait(), exited.set()), daemon=True).start()
    # The claim is "within a second"; the deadline is generous so a loaded machine cannot fail
    # the test, and a search that ignored the signal (as before) would run for weeks.
    assert exited.wait(DEADLINE_S), "kalah solve did not stop on SIGINT"
    out, err = process.communicate()
    return out.decode(), (seen + err).decode()
