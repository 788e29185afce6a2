"""The product as a user installs it: a wheel built with ``python -m build --wheel`` from a
clean export of the repository, installed into fresh virtualenvs (nothing of the source tree
on the path), with and without the ``server`` extra.

Slow (it builds the extensions and installs the dependencies from the package index):
``.venv/bin/python -m pytest --run-slow tests/system/test_wheel.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from harness import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def clean_export(destination: Path) -> None:
    """The files a fresh clone would have (tracked, plus new files not ignored): no build
    products, no virtualenv, no compiled extension."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def run(*command: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,  # type: ignore[call-overload]
    )


def user_env(home: Path) -> dict[str, str]:
    """A user's environment: the package index settings kept, nothing of this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("export")
    clean_export(source)
    assert not list(source.rglob("*.so")) and not (source / ".venv").exists()
    dist = tmp_path_factory.mktemp("dist")
    built = run(sys.executable, "-m", "build", "--wheel", "--outdir", dist, source)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (found,) = dist.glob("kalah_core-*.whl")
    return found


def venv(where: Path, requirement: str, home: Path) -> Path:
    created = run(sys.executable, "-m", "venv", where)
    assert created.returncode == 0, created.stderr
    installed = run(where / "bin" / "pip", "install", requirement, env=user_env(home))
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return where / "bin"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("empty")


@pytest.fixture(scope="module")
def served(
    wheel: Path, home: Path, empty: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``kalah serve`` of the wheel installed with the server extra, from an empty folder."""
    bin_dir = venv(tmp_path_factory.mktemp("venv") / "server", f"{wheel}[server]", home)
    port = free_port()
    env = {**user_env(home), "KALAH_WORKERS": "1", "KALAH_EGDB_PATH": "off"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log = empty.parent / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(bin_dir / "kalah"), "serve", "--port", str(port)],
            cwd=empty,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for(lambda: requests.get(base + "/livez", timeout=1).ok, 60, "kalah serve")
        except RuntimeError:
            raise AssertionError(log.read_text(errors="replace")[-3000:]) from None
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.read_text(errors="replace")[-3000:]
        assert list(empty.iterdir()) == [], "kalah serve wrote into the folder it ran from"


def test_the_wheel_holds_the_compiled_engine_and_the_service(wheel: Path) -> None:
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    service = {"kalah_service/ops/gunicorn_conf.py", "kalah_service/openapi.json"}
    assert service | {"kalah_core/py.typed", "kalah_service/board/static/index.html"} <= names
    assert {"kalah_core/data/book.bin", "kalah_core/data/deepbook.json.xz"} <= names  # the books
    assert not [n for n in names if n.startswith("api/")]  # installed as kalah_service only
    assert any(n.startswith("kalah_core/_search.") and n.endswith(".so") for n in names)
    assert not [n for n in names if n.endswith(".c") or n.startswith(("tests/", "deploy/"))]


def test_kalah_serve_from_the_wheel_answers(served: str) -> None:
    assert requests.get(served + "/livez", timeout=5).json() == {"status": "ok"}
    answer = requests.get(
        served + "/v1/analysis", params={"position": "start", "houses": 3, "seeds": 3}, timeout=30
    ).json()
    assert (answer["value"], answer["exact"], answer["best_moves"]) == (2, True, [1, 2])
    body = {"position": "100706-10-002005-5-s", "rules": "kalaha", "limits": {"time_ms": 5000}}
    posted = requests.post(served + "/v1/analysis", json=body, timeout=30).json()
    assert posted["exact"] is True and posted["lower"] == posted["upper"] == posted["value"]
    spec = requests.get(served + "/openapi.json", timeout=5).json()
    assert spec["paths"]["/v1/analysis"]["post"]["operationId"] == "analyse"


def test_the_wheel_without_the_extra_is_the_engine_alone(
    wheel: Path, home: Path, empty: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    bin_dir = venv(tmp_path_factory.mktemp("venv") / "bare", str(wheel), home)
    env = user_env(home)
    solved = run(
        bin_dir / "kalah",
        "solve",
        "--houses",
        "3",
        "--seeds",
        "3",
        "--json",
        "start",
        cwd=empty,
        env=env,
    )
    assert solved.returncode == 0, solved.stderr
    answer = json.loads(solved.stdout)
    assert (answer["value"], answer["exact"], answer["best_moves"]) == (2, True, [1, 2])
    shown = run(bin_dir / "python", "-m", "kalah_core", "show", "start", cwd=empty, env=env)
    assert shown.returncode == 0 and "444444-0-444444-0-s" in shown.stdout

    for command in (["analyse", "start"], ["serve"], ["batch", "x.jsonl"], ["keys", "create"]):
        refused = run(bin_dir / "kalah", *command, cwd=empty, env=env)
        assert refused.returncode != 0 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert refused.stderr.startswith(f"kalah {command[0]}: ")
        assert "pip install 'kalah-core[server]'" in refused.stderr
    assert run(bin_dir / "python", "-c", "import flask", env=env).returncode != 0


def test_the_board_and_the_docs_are_served_from_the_wheel(served: str) -> None:
    import re

    page = requests.get(served + "/", timeout=5)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    files = re.findall(r'(?:src|href)="(/board/[^"]+)"', page.text)
    assert any(f.endswith("/js/main.js") for f in files)
    for url in files:
        assert requests.get(served + url, timeout=5).status_code == 200, url
    docs = requests.get(served + "/docs", timeout=5).text
    for url in re.findall(r'(?:src|href)="(/[^"]+)"', docs):
        assert requests.get(served + url, timeout=5).status_code == 200, url
    svg = requests.get(served + "/v1/board.svg", params={"position": "start"}, timeout=5)
    assert svg.headers["Content-Type"].startswith("image/svg+xml")
