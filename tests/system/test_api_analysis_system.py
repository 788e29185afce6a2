"""The system tests of tests/service/test_api_analysis.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient
from test_api_analysis import MIDGAME


def test_every_json_command_shapes_an_analysis_as_the_api_does(
    client: FlaskClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kalah solve --json``, ``kalah analyse --json`` and ``POST /v1/analysis`` agree on
    field names and forms (moves' positions compact); only the run's own figures differ (the
    API's ``cached``; ``kalah solve``'s ``expanded``, its nodes counted as the published solver
    counts them, for benchmarks/vs_irving.py)."""
    import json

    from kalah_core.cli import main

    body = {"position": MIDGAME, "rules": "kalah", "limits": {"time_ms": 5000}}
    api = client.post("/v1/analysis", json=body).get_json()
    assert main(["solve", "--json", "--time", "5", MIDGAME]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert main(["analyse", "--json", "--time-ms", "5000", MIDGAME]) == 0
    analysed = json.loads(capsys.readouterr().out)

    run_figures = ("cached", "nodes", "expanded", "time_ms")
    for answer in (api, solved, analysed):
        assert answer["exact"] is True
        assert {k: v for k, v in answer.items() if k not in run_figures} == {
            k: v for k, v in api.items() if k not in run_figures
        }
    assert set(api) == set(analysed) == {*solved, "cached"} - {"expanded"}
    assert all(isinstance(m["position"], str) for m in solved["moves"])
