"""Shared test configuration: the ``--run-slow`` flag and hypothesis profiles."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# The service builds a default endgame database in the background unless told otherwise; the
# tests choose explicitly (tests/api/test_api_egdb.py covers that path).
os.environ.setdefault("KALAH_EGDB_PATH", "off")
# Without Redis the answers go to an embedded store on disk: the session's own, never the
# user's cache folder (tests that need a fresh or a shared one set KALAH_CACHE_DIR).
os.environ.setdefault("KALAH_CACHE_DIR", tempfile.mkdtemp(prefix="kalah-test-answers-"))
# Tests fire many requests from 127.0.0.1: the rate-limit tests set their own small limits.
os.environ.setdefault("KALAH_LIMIT_ANONYMOUS", "1000000/minute")

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(autouse=True)
def _own_answer_store(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's apps share an answer store of the test's own (as one machine's workers
    do), so no test sees answers an earlier one cached."""
    monkeypatch.setenv("KALAH_CACHE_DIR", f"{tmp_path}/kalah-answers")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    deselected = [item for item in items if "slow" in item.keywords]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if "slow" not in item.keywords]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Report what the fuzzers tried and what the load and fault tests measured."""
    from figures import MEASURED, TRIED

    if TRIED:
        terminalreporter.section("fuzz inputs tried")
        for target, count in sorted(TRIED.items()):
            terminalreporter.write_line(f"{count:8d}  {target}")
        terminalreporter.write_line(f"{sum(TRIED.values()):8d}  in all")
    if MEASURED:
        terminalreporter.section("load and fault figures")
        for line in MEASURED:
            terminalreporter.write_line(line)
