"""The system tests of tests/engine/test_cli_interrupt.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_interrupt import _interrupt_when_running, _solve


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
