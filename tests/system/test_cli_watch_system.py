"""The system tests of tests/service/test_cli_watch.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest


@pytest.mark.parametrize("columns", [200, 60])
def test_watch_redraws_one_block_on_a_terminal(tmp_path: Path, columns: int) -> None:
    """Each redraw goes up exactly the rows the block before took: on a narrow terminal its long
    lines wrap, and counting lines instead of rows left a copy of the block per redraw."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
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
    pieces = re.split(r"\x1b\[(\d+)F\x1b\[J", text)
    for block, up in zip(pieces[0::2], pieces[1::2], strict=False):
        rows = sum(max(1, -(-len(line) // columns)) for line in block.rstrip("\r\n").split("\r\n"))
        assert int(up) == rows, (columns, block)
    assert "source: search" in text.rsplit("\x1b[J", 1)[-1]
