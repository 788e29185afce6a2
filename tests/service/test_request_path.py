"""How many project modules one ``GET /v1/analysis`` runs through (issue 48's goal), traced by
``benchmarks/request_path.py``: the counts reached may not grow back. A hit parses the request,
reads the store and answers (no database, no settings, no problem module, no caller lookup
for an unlimited anonymous caller); a miss adds the search and the store's write, never a
worker's once-only work (engines, databases)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from kalah_core import Position, Rules, egdb
from kalah_service import create_app
from kalah_service.core import endgames
from kalah_service.core.request import AnalysisRequest, Limits

ROOT = Path(__file__).resolve().parents[2]

MAX_HIT = 14
"""20 before the hit path was shortened (the databases, the settings and the problems per
request, the caller looked up and the forwarding middleware run for nothing)."""

MAX_MISS = 27
"""31 before (the same, and a search charged where no limit applies); 25 with the solver in one
module, 27 since its proofs and budget are modules of their own (the same code runs)."""


def _request_path() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "request_path", ROOT / "benchmarks" / "request_path.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_hit_and_a_miss_cross_no_more_modules_than_they_need(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KALAH_EGDB_SEEDS", "0")  # no background build (request_path's setting)
    monkeypatch.delenv("KALAH_LIMITS", raising=False)  # auto: a loopback caller is not limited
    miss, hit = _request_path().request_paths(tmp_path)
    assert len(hit) <= MAX_HIT, hit
    assert len(miss) <= MAX_MISS, miss
    # What only a miss or an error needs stays off the hit path.
    for module in (
        "kalah_core.databases",
        "kalah_core.egdb",
        "kalah_service.core.endgames",
        "kalah_service.core.problems",
        "kalah_service.base.config",
        "kalah_service.edge.callers",
        "kalah_service.core.engines",
    ):
        assert module not in hit
    assert "kalah_service.core.problems" not in miss
    assert "kalah_service.ratelimit.costs" not in miss  # no limit applies to this caller


def test_the_key_kept_per_rules_set_follows_a_database_attached_later(tmp_path: Path) -> None:
    """The key's database part is computed once per rules set, not per request, yet a
    database attached afterwards (a background build that finished, a file copied into the
    folder) still gives an inexact answer a new key: a fresh search may prove it."""
    folder = tmp_path / "databases"
    folder.mkdir()
    app = create_app({"KALAH_CACHE_DIR": str(tmp_path / "answers"), "KALAH_EGDB_PATH": str(folder)})
    rules = Rules(houses=3)
    request = AnalysisRequest(Position.start(rules), rules, Limits(1000))
    analyser = app.extensions["kalah"]
    assert ".egdb-1:" in analyser.keys(request).limits  # none yet
    assert ".egdb-1:" in analyser.keys(request).limits  # kept
    egdb.build(egdb.default_path(rules, 4, folder), rules, 4, progress=False)
    settings = analyser.settings
    assert endgames.service(settings.egdb_path, settings.egdb_seeds).rescan()
    assert ".egdb4:" in analyser.keys(request).limits
