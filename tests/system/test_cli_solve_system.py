"""The system tests of tests/engine/test_cli_solve.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import pytest
from test_cli_solve import answer_of, solve


def test_threads_give_the_same_answer(capsys: pytest.CaptureFixture[str]) -> None:
    one = solve(capsys, "--threads", "1")
    assert answer_of(solve(capsys, "--threads", "2")) == answer_of(one)
    assert answer_of(solve(capsys)) == answer_of(one)  # every core by default
