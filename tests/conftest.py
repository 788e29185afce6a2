"""Shared test configuration: the test tiers, the ``--run-slow`` flag and hypothesis profiles.

The tiers are folders, so that where a test lives says what it costs (and what a new test
next to it may do), and a run of the fast tier never imports the system tier's modules:

- ``tests/engine/``: kalah_core (rules, notation, search, books, databases, the KGP agent, the
  command line) in process.
- ``tests/service/``: the service in process (Flask's test client, its commands) and the
  checks of the repository around it (docs, import layers, deploy files).
- ``tests/system/``: a test that starts servers, subprocesses or Redis, or runs for more than a
  few seconds.
- ``tests/browser/``: the board in a real browser (a system test too).

``python -m pytest`` (the README's test command, what CI runs) runs every tier but the tests
marked ``slow``, one at a time (the system tests measure times and survive faults: they
share no cores). ``python -m pytest -m "not system"`` is the fast tier, everything in
``tests/engine/`` and ``tests/service/``; add ``-n auto`` to spread it over the cores
(pytest-xdist: the fast tier starts no server and each test writes under its own
``tmp_path``, so its tests share no port and no file).

:func:`pytest_collection_modifyitems` marks ``tests/system/`` and ``tests/browser/``
``system`` by their path. A system test that needs a fast module's helpers
lives in ``tests/system/<module>_system.py`` and imports them (``pythonpath`` in
pyproject.toml puts every tier's folder on the path). Two safety nets keep a test written in
the wrong folder out of the fast tier: the hook also marks a test that uses a fixture of
:data:`SYSTEM_FIXTURES`, and ``@pytest.mark.system`` still works on one test or one
parameter (the largest endgame databases of tests/engine/test_egdb.py).

``@pytest.mark.slow``: minutes each (the wheel built and installed, deep perft, Kalah(6,4)):
only with ``--run-slow``, so the default run leaves them out.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["service_fixtures"]  # the apps, Redis and gunicorn fixtures every tier uses

# The service builds a default endgame database in the background unless told otherwise; the
# tests choose explicitly (tests/service/test_api_egdb.py covers that path).
os.environ.setdefault("KALAH_EGDB_PATH", "off")
# Without Redis the answers go to an embedded store on disk: the session's own, never the
# user's cache folder (tests that need a fresh or a shared one set KALAH_CACHE_DIR).
os.environ.setdefault("KALAH_CACHE_DIR", tempfile.mkdtemp(prefix="kalah-test-answers-"))
# Tests fire many requests from 127.0.0.1: the rate-limit tests set their own small limits.
os.environ.setdefault("KALAH_LIMIT_ANONYMOUS", "1000000/minute")
# The hundreds of apps the tests make in-process need no 64 MiB tables: each app touches two
# as it starts, and the kernel's time zeroing them was a good part of the service tests' cost.
# The servers the tests start (tests/harness.py) keep the service's default.
os.environ.setdefault("KALAH_TT_MB", "2")

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), print_blob=True)
settings.register_profile("fast", parent=settings.get_profile("default"), max_examples=25)
"""The fast tier's: a quarter of hypothesis's default examples for the properties that do not
set their own count; every other run (the whole suite, CI) tries the default 100."""
settings.load_profile("ci" if os.environ.get("CI") else "default")


def _fast_tier(config: pytest.Config) -> bool:
    return bool(config.getoption("markexpr", "").split() == ["not", "system"])


def pytest_configure(config: pytest.Config) -> None:
    if _fast_tier(config):
        settings.load_profile("fast")


@pytest.fixture(autouse=True)
def _runners_stop_with_their_test() -> Iterator[None]:
    """The embedded job runner threads a test's apps started end with the test: left running,
    they wrote into later tests' logs and held SQLite locks a later test's fork copied."""
    yield
    if "kalah_service.jobs.runner" in sys.modules:  # only tests that made an app import it
        assert sys.modules["kalah_service.jobs.runner"].stop_in_server() == 0


@pytest.fixture(autouse=True)
def _own_answer_store(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's apps share an answer store of the test's own (as one machine's workers
    do), so no test sees answers an earlier one cached."""
    monkeypatch.setenv("KALAH_CACHE_DIR", f"{tmp_path}/kalah-answers")


TESTS = Path(__file__).resolve().parent
SYSTEM_FOLDERS = (TESTS / "system", TESTS / "browser")
"""The folders whose every test is in the ``system`` tier."""


def _in_system_folder(path: Path) -> bool:
    return any(path.is_relative_to(folder) for folder in SYSTEM_FOLDERS)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast tier (``-m "not system"``) does not even import the system folders' modules:
    their imports and collection (schemathesis builds its cases then) cost seconds."""
    return True if _fast_tier(config) and _in_system_folder(collection_path) else None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


SYSTEM_FIXTURES = frozenset(
    {"redis_server", "own_redis", "redis_app", "gunicorn_server", "base_url", "browser"}
)
"""Fixtures that start a process (tests/service_fixtures.py, tests/browser/conftest.py): a
test that uses one, even through another fixture, is in the ``system`` tier."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _in_system_folder(item.path) or SYSTEM_FIXTURES.intersection(
            getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.system)
    if config.getoption("--run-slow"):
        return
    deselected = [item for item in items if "slow" in item.keywords]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if "slow" not in item.keywords]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its figures to the controller, which prints the summary."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        from figures import MEASURED, TRIED

        output["figures"] = {"tried": dict(TRIED), "measured": MEASURED}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller: a worker is done; add its figures to this process's."""
    from figures import MEASURED, TRIED

    figures = getattr(node, "workeroutput", {}).get("figures", {})
    TRIED.update(figures.get("tried", {}))
    MEASURED.extend(figures.get("measured", []))


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
