"""The system tests of tests/engine/test_cli.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from test_cli import EXAMPLE, EXAMPLE_JSON


def test_replay_example_via_the_installed_script() -> None:
    script = Path(sys.executable).with_name("kalah")
    found = str(script) if script.exists() else shutil.which("kalah")
    assert found, "the 'kalah' console script is not installed"
    env = os.environ | {"PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["kalah", "replay", "--rules", "kalaha", "--json", EXAMPLE],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == EXAMPLE_JSON


def test_the_service_commands_name_the_extra_without_it() -> None:
    """kalah_service.ops.commands, loaded without the server extra, fails with the line to print."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.metadata as m; real = m.distribution\n"
            "def fake(name):\n"
            "    if name.lower() == 'flask': raise m.PackageNotFoundError(name)\n"
            "    return real(name)\n"
            "m.distribution = fake\n"
            "from kalah_core.cli import main; raise SystemExit(main(['analyse', 'start']))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'kalah-core[server]'" in done.stderr and "flask" in done.stderr


def test_python_m_kalah_core() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kalah_core", "show", "--json", "start"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["compact"] == "444444-0-444444-0-s"


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    script = Path(sys.executable).with_name("kalah")
    done = subprocess.run(
        f"'{script}' solve --houses 3 --seeds 3 start | true",  # the reader is gone at once
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""


def test_solve_imports_only_what_it_needs(tmp_path: Path) -> None:
    """`kalah solve` reads no entry point and imports neither the book builders, the task
    executors (multiprocessing), the KGP agent nor what only builds and digests need: each
    adds to every solve's start-up."""
    code = (
        "import sys; from kalah_core.cli import main\n"
        "code = main(['solve', 'start', '--houses', '3', '--seeds', '2', '--tt-mb', '1', "
        "'--threads', '1', '--no-progress', '--json'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "raise SystemExit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KALAH_EGDB_PATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.splitlines()[-1].split())
    assert "kalah_core.solver" in modules  # the listing is real
    unwanted = {
        "importlib.metadata",
        "multiprocessing",
        "kalah_core.book_build",
        "kalah_core.deepbook_build",
        "kalah_core.deepbook_refine",
        "kalah_core.prove",
        "kalah_core.tasks",
        "kalah_core.kgp",
        "kalah_service",
        "platformdirs",  # only for the cache folder, not with KALAH_EGDB_PATH set
        "tempfile",
        "hashlib",
    }
    assert not modules & unwanted, modules & unwanted


def test_each_command_imports_only_its_own_groups_modules() -> None:
    """A command group's module imports the engine modules its commands need when one of them
    runs: `kalah show` loads neither the search nor the databases nor the books."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from kalah_core.cli import main\n"
            "code = main(['show', 'start', '--json'])\n"
            "print(' '.join(sorted(sys.modules)))\n"
            "raise SystemExit(code)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.splitlines()[-1].split())
    assert "kalah_core.cli.cmd_position" in modules  # the listing is real
    unwanted = {
        "kalah_core.solver",
        "kalah_core._search",
        "kalah_core._table",
        "kalah_core.egdb",
        "kalah_core.databases",
        "kalah_core.book",
        "kalah_core.deepbook",
        "kalah_core.answer",
    }
    assert not modules & unwanted, modules & unwanted
