"""The committed ``api/openapi.json`` is the app's spec, and the spec documents every field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from kalah_service import openapi_text
from kalah_service.export_openapi import SPEC_PATH, main


def test_committed_spec_matches_the_code() -> None:
    committed = Path(SPEC_PATH).read_text(encoding="utf-8")
    assert committed == openapi_text(), (
        "api/openapi.json is out of date: run python -m kalah_service.export_openapi"
    )


def test_export_check_mode(tmp_path: Path) -> None:
    stale = tmp_path / "openapi.json"
    stale.write_text("{}\n", encoding="utf-8")
    assert main(["--check", "--output", str(stale)]) == 1
    assert main(["--output", str(stale)]) == 0
    assert main(["--check", "--output", str(stale)]) == 0


def _maxima(node: Any, found: dict[int, int]) -> None:
    """Count the ``maximum`` values anywhere in ``node``."""
    if isinstance(node, dict):
        if isinstance(node.get("maximum"), int):
            found[node["maximum"]] = found.get(node["maximum"], 0) + 1
        for value in node.values():
            _maxima(value, found)
    elif isinstance(node, list):
        for value in node:
            _maxima(value, found)


def test_served_spec_is_the_committed_one_with_this_servers_budget_maximum(
    client: FlaskClient,
) -> None:
    """The app with default settings serves the committed spec; this one (KALAH_MAX_TIME_MS
    5000) differs only in the time budgets' maximum, which is its own."""
    committed_text = Path(SPEC_PATH).read_text(encoding="utf-8")
    served = client.get("/openapi.json").get_json()
    assert served["openapi"].startswith("3.")
    assert client.get("/docs").status_code == 200
    as_default = json.loads(json.dumps(served).replace('"maximum": 5000', '"maximum": 10000'))
    assert as_default == json.loads(committed_text)
    before: dict[int, int] = {}
    after: dict[int, int] = {}
    _maxima(json.loads(committed_text), before)
    _maxima(served, after)
    assert after[5000] == before[10000] == 4  # Limits, GameLimits, two query parameters


def _undocumented(node: Any, path: str) -> list[str]:
    missing = []
    for name, prop in node.get("properties", {}).items():
        if "description" not in prop:
            missing.append(f"{path}.{name}")
        missing += _undocumented(prop, f"{path}.{name}")
    return missing


def test_every_field_and_parameter_is_described() -> None:
    spec = json.loads(openapi_text())
    missing = []
    for name, schema in spec["components"]["schemas"].items():
        missing += _undocumented(schema, name)
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if method == "parameters":  # path-level parameters (e.g. /problems/{slug})
                continue
            assert operation.get("summary") or operation.get("description"), f"{method} {path}"
            for parameter in operation.get("parameters", []):
                if "description" not in parameter:
                    missing.append(f"{method} {path} ?{parameter['name']}")
    assert not missing, missing


def test_public_contract_paths() -> None:
    paths = json.loads(openapi_text())["paths"]
    assert {
        "/v1/analysis",
        "/v1/best-move",
        "/v1/play",
        "/v1/rules",
        "/livez",
        "/readyz",
        "/metrics",
    } <= set(paths)
    assert set(paths["/v1/analysis"]) >= {"get", "post"}
