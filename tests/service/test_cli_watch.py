"""``kalah analyse`` (issue 50, deliver 3): the text always shows bounds, depth and where the
answer came from; ``--watch`` shows each deepening (one block redrawn on a terminal), and
``--json --watch`` prints NDJSON events, the answer last."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kalah_core.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def without_time(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("time_ms", "cached")}


def test_the_text_shows_bounds_depth_and_source(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "analyse", "--rules", "piet-hein", "start")
    head = out.splitlines()[0]
    answer = json.loads(run(capsys, "analyse", "--rules", "piet-hein", "start", "--json"))
    assert f"bounds [{answer['lower']:+d}, {answer['upper']:+d}]" in head
    assert f"depth {answer['depth']}" in head and "source: deep book" in head
    for move, line in zip(answer["moves"], out.splitlines()[1:], strict=False):
        assert f"[{move['lower']:+d}, {move['upper']:+d}]" in line
    small = ("analyse", "--rules", "kalah", "--houses", "3", "--seeds", "2", "start")
    assert "proven, source: search" in run(capsys, *small).splitlines()[0]
    assert "proven, source: cache" in run(capsys, *small).splitlines()[0]


def test_json_watch_prints_ndjson_events_and_the_answer_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("analyse", "--rules", "kalah", "--seeds", "5", "--depth", "9", "start", "--json")
    lines = run(capsys, *argv, "--watch").splitlines()
    events = [json.loads(line) for line in lines]
    *progress, final = events
    assert final["final"] is True and progress and not any(e["final"] for e in progress)
    depths = [e["depth"] for e in progress]
    assert depths == sorted(depths) and depths[-1] == 9
    one_shot = json.loads(run(capsys, *argv))
    assert one_shot["cached"] is True  # the watched analysis stored its answer
    assert without_time(final["answer"]) == without_time(one_shot)
