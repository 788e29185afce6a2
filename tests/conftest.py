"""Shared test configuration: the test tiers, the ``--run-slow`` flag and hypothesis profiles.

Tiers:

- ``python -m pytest`` (the README's test command, what CI runs): everything but ``slow``.
- ``python -m pytest -m "not system"``: the fast tier: the engine, the property tests and the
  service through Flask's test client.
- ``@pytest.mark.system``: a test that starts servers, subprocesses, browsers or Redis, or
  runs for more than a few seconds. A test that uses one of :data:`SYSTEM_FIXTURES` (which
  start ``redis-server``, gunicorn or a browser) is marked so here; any other that starts a
  process or runs long carries the mark itself.
- ``@pytest.mark.slow``: minutes each (the wheel built and installed, deep perft, Kalah(6,4)):
  only with ``--run-slow``, so the default run leaves them out.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

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
# The hundreds of apps the tests make in-process need no 64 MiB tables: each app touches two
# as it starts (the fast tier's API tests spent 5.3 s in the kernel with 64 MiB, 1.2 s with 8).
# The servers the tests start (tests/harness.py) keep the service's default.
os.environ.setdefault("KALAH_TT_MB", "16")

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(autouse=True)
def _own_answer_store(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's apps share an answer store of the test's own (as one machine's workers
    do), so no test sees answers an earlier one cached."""
    monkeypatch.setenv("KALAH_CACHE_DIR", f"{tmp_path}/kalah-answers")


SYSTEM_MODULE = re.compile(r"^pytestmark = pytest\.mark\.system$", re.MULTILINE)
"""A module whose every test is in the ``system`` tier says so in this one line."""


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast tier (``-m "not system"``) does not even import a module marked ``system`` as
    a whole: its imports and collection (schemathesis builds its cases then) cost seconds."""
    if config.getoption("markexpr", "").split() != ["not", "system"]:
        return None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if SYSTEM_MODULE.search(collection_path.read_text(encoding="utf-8")) else None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


SYSTEM_FIXTURES = frozenset(
    {"redis_server", "own_redis", "redis_app", "gunicorn_server", "base_url", "browser"}
)
"""Fixtures that start a process (tests/api/conftest.py, tests/browser/conftest.py): a test
that uses one, even through another fixture, is in the ``system`` tier."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SYSTEM_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.system)
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
