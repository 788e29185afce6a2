"""Issue 47: Ctrl-C on a local ``kalah batch`` hung in its process pool until a second
Ctrl-C, and then wrote nothing. One Ctrl-C (SIGINT to the process group, as a terminal sends
it) now stops the pool and writes the results finished so far, saying so on stderr."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kalah_service.base.config import load_settings
from kalah_service.core.request import AnalysisRequest

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 180.0
"""A hang guard only: every wait below is for a condition."""
COUNT = 60


@pytest.mark.parametrize("workers", [2, 1])
def test_one_ctrl_c_stops_a_local_batch_and_writes_what_is_finished(
    workers: int, tmp_path: Path
) -> None:
    """On a pool of processes (which hung) and in the command's own process (which printed
    a traceback): one SIGINT, exit status 130, the finished lines written, the rest null."""
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [
        json.dumps(
            {
                "south": [4, 4, 4, 4, 4, 1 + i % 20],
                "north": [4, 4, 4, 4, i // 20, 4],
                "stores": [0, 0],
            }
        )
        for i in range(COUNT)
    ]
    source.write_text("".join(json.dumps({"position": json.loads(x)}) + "\n" for x in lines))
    env = {
        **os.environ,
        "KALAH_REDIS_URL": "",
        "KALAH_EGDB_PATH": "off",
        "KALAH_TT_MB": "16",
        "KALAH_CACHE_DIR": str(tmp_path / "answers"),
    }
    command = [sys.executable, "-m", "kalah_core.cli", "batch", str(source), "-o", str(out)]
    process = subprocess.Popen(
        [*command, "--workers", str(workers), "--time-ms", "400"],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, as a terminal's job
    )
    assert process.stderr is not None
    stderr = bytearray()
    progressed = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        while chunk := process.stderr.read1(4096):
            stderr.extend(chunk)
            done = [int(n) for n in re.findall(rb"(\d+)/%d" % COUNT, bytes(stderr))]
            if done and max(done) >= 2:
                progressed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert progressed.wait(DEADLINE_S), bytes(stderr).decode(errors="replace")[-2000:]
        os.killpg(process.pid, signal.SIGINT)  # one Ctrl-C
        code = process.wait(DEADLINE_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    reader.join(DEADLINE_S)
    text = bytes(stderr).decode(errors="replace")
    assert code == 130, text[-2000:]
    assert "interrupted" in text and "Traceback" not in text, text[-2000:]
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == COUNT, "one line per item, in input order"
    answered = [r for r in results if r is not None]
    assert 2 <= len(answered) < COUNT, "what was finished is written, the rest is null"
    settings = load_settings(environ={})
    for item, result in zip(lines, results, strict=True):
        if result is not None:  # each line is its own item's answer
            position = AnalysisRequest.from_body(settings, {"position": json.loads(item)}).position
            assert result["position"] == position.compact(), result
    assert f"{len(answered)} of {COUNT}" in text
