"""deploy/Dockerfile names modules of the installed wheel (``kalah_service``, never the source
folder ``api``): each module its ``python -c "import …"`` checks must import in an installed
environment, as they do in the image."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"


def imported_modules() -> list[str]:
    modules = []
    for statement in re.findall(r'python -c "import ([^"]+)"', DOCKERFILE.read_text()):
        modules += [name.strip() for name in statement.split(",")]
    return modules


def test_the_image_checks_modules_that_the_wheel_installs() -> None:
    modules = imported_modules()
    assert "kalah_service.ops.gunicorn_conf" in modules
    for name in modules:
        assert not name.startswith("api."), f"{name}: the wheel installs kalah_service, not api"
        importlib.import_module(name)
