"""The system tests of tests/service/test_docs.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import shlex
import signal
import subprocess
from pathlib import Path

import pytest
import requests
from harness import Gunicorn, RedisServer, free_port, wait_for
from test_docs import BASE, INSTALL, ROOT, RUN, VENV, Block, environment, help_commands, run


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_every_shell_block_runs(block: Block, tmp_path: Path) -> None:
    (tmp_path / ".venv").symlink_to(VENV)
    if block.needs == "help":
        for words in help_commands(block.text):
            run(shlex.join(words), tmp_path, environment(tmp_path), ROOT)
    elif block.needs == "redis":
        with RedisServer(free_port()) as redis_server:
            run(
                block.text,
                tmp_path,
                environment(tmp_path, KALAH_REDIS_URL=redis_server.url),
                tmp_path,
            )
    elif block.needs == "server":
        server = Gunicorn({"KALAH_REDIS_URL": "", "KALAH_EGDB_PATH": "off"})
        base = server.start(ready=True)
        try:
            run(block.text.replace(BASE, base), tmp_path, environment(tmp_path), tmp_path)
        finally:
            server.close()
    else:
        run(block.text, tmp_path, environment(tmp_path), tmp_path)


def test_the_first_command_serves(tmp_path: Path) -> None:
    """The README's first command ends in ``kalah serve``: from an empty folder it answers
    (on a free port here: ``--port``, where the README's serves 8000) and stops on SIGTERM.
    The install before it is what this environment is (tests/system/test_wheel.py installs from a
    wheel)."""
    serve = INSTALL.text.strip().split(" && ")[-1]
    assert serve == ".venv/bin/kalah serve"
    (tmp_path / ".venv").symlink_to(VENV)
    port = free_port()
    env = environment(tmp_path, KALAH_EGDB_PATH="off")
    process = subprocess.Popen(
        [*shlex.split(serve), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(
            lambda: requests.get(f"http://127.0.0.1:{port}/livez", timeout=5).ok, 120, "kalah serve"
        )
        page = requests.get(f"http://127.0.0.1:{port}/", timeout=60)
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=120)[0].decode(errors="replace")
    assert process.returncode == 0, output[-3000:]
