"""The system tests of tests/service/test_cli_watch.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path


def test_watch_redraws_one_block_on_a_terminal(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "KALAH_CACHE_DIR": str(tmp_path / "answers")}
    argv = ["analyse", "--rules", "kalah", "--seeds", "5", "--depth", "9", "start", "--watch"]
    process = subprocess.Popen(
        [sys.executable, "-m", "kalah_core", *argv],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the command ended: the terminal is closed
            break
        if not chunk:
            break
        output += chunk
    assert process.wait(60) == 0, process.stderr
    os.close(leader)
    text = output.decode()
    blocks = text.count("South to move in")
    redraws = text.count("\x1b[J")
    assert blocks >= 2 and redraws == blocks - 1  # every block after the first replaces it
    assert "source: search" in text.rsplit("\x1b[J", 1)[-1]
