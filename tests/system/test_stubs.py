"""The stubs in stubs/ (mypy's types of libraries that ship none) agree with the installed
libraries: mypy's stubtest checks each name they declare against the runtime object, so an
upgrade that changes a signature the service relies on fails here, not silently in mypy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "stubs"


def test_stubs_match_the_installed_libraries() -> None:
    packages = sorted(path.name for path in STUBS.iterdir() if path.is_dir())
    assert packages == ["flask_smorest", "swagger_ui_bundle"]
    # --ignore-missing-stub: the stubs declare only what the service uses
    checked = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", *packages, "--ignore-missing-stub"],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(STUBS)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
