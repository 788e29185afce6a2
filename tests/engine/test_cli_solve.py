"""``kalah solve``: how much to prove (``--prove``, ``--best-only``) and on how many threads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kalah_core.cli import main

# Kalah(4,3) mid-game: several moves, not all optimal.
POSITION = "3033-2-1403-5-s"
ARGS = ("--houses", "4", "--seeds", "3", POSITION)


def solve(capsys: pytest.CaptureFixture[str], *options: str) -> Any:
    code = main(["solve", "--json", "--tt-mb", "4", *options, *ARGS])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def answer_of(analysis: dict[str, Any]) -> dict[str, Any]:
    """The analysis without what depends on the run (its nodes and time)."""
    return {k: v for k, v in analysis.items() if k not in ("nodes", "expanded", "time_ms")}


def test_prove_levels(capsys: pytest.CaptureFixture[str]) -> None:
    every = solve(capsys, "--prove", "all", "--threads", "1")
    assert every["exact"] and all(m["exact"] for m in every["moves"])
    assert 0 < every["expanded"] < every["nodes"]  # the published solver's count: see vs_irving
    assert len(every["moves"]) >= 3
    optimal = {m["move"] for m in every["moves"] if m["value"] == every["value"]}
    assert set(every["best_moves"]) == optimal
    for level in ("value", "optimal"):
        answer = solve(capsys, "--prove", level, "--threads", "1")
        assert (answer["value"], answer["exact"]) == (every["value"], True)
        assert set(answer["best_moves"]) <= optimal
        for move in answer["moves"]:  # bounds proven for every move, exact or not
            true = next(m["value"] for m in every["moves"] if m["move"] == move["move"])
            assert move["lower"] <= true <= move["upper"]
    assert set(solve(capsys, "--prove", "optimal")["best_moves"]) == optimal
    assert answer_of(solve(capsys, "--best-only")) == answer_of(solve(capsys, "--prove", "optimal"))


@pytest.mark.parametrize("bad", ["0", "-1", "x", "65"])
def test_bad_thread_count_is_a_usage_error(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", "--threads", bad, *ARGS])
    assert exit_info.value.code == 2
    assert "threads" in capsys.readouterr().err
