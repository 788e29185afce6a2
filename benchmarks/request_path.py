"""Which project modules one ``GET /v1/analysis`` runs through, on a cache miss and on a hit.

    python benchmarks/request_path.py            # the counts, then each path's modules
    python benchmarks/request_path.py --quiet    # the two counts only
    KALAH_LIMITS=on python benchmarks/request_path.py   # a rate-limited caller's paths

An app with the embedded answer store in a fresh folder (no Redis, ``KALAH_LIMITS=auto`` as
``kalah serve`` runs it: the test client connects from loopback, which ``auto`` does not
limit; ``kalah serve --behind-proxy`` sets ``on``) makes its engines as a gunicorn worker does
when it starts (``post_worker_init``) and answers one warm-up request first, so that what a
worker does once (its engines, its databases' start) is not counted; then a position it has
not seen (the miss: parsed, searched, stored) and the same request again (the hit: read from
the store).
A profile hook on every thread (the search runs on the engine pool's) records the module of
each Python function called while the request is handled; the modules of ``kalah_service``
and ``kalah_core`` are the request's path. Compiled engine code (``kalah_core._search``)
raises no Python call and is not counted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("kalah_service", "kalah_core")

_recording = threading.Event()
_seen: set[str] = set()


def _hook(frame: FrameType, event: str, arg: Any) -> None:
    if event == "call" and _recording.is_set():
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] in PROJECT:
            _seen.add(name)


def _path_of(client: Any, url: str) -> list[str]:
    _seen.clear()
    _recording.set()
    try:
        response = client.get(url)
    finally:
        _recording.clear()
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(_seen)


def request_paths(folder: Path) -> tuple[list[str], list[str]]:
    """(the modules of a miss, the modules of a hit) of ``GET /v1/analysis``."""
    os.environ.setdefault("KALAH_EGDB_SEEDS", "0")  # the databases there are: no build started
    threading.setprofile(_hook)  # every thread started from now on: the engine pool's too
    sys.setprofile(_hook)
    try:
        from kalah_service import create_app

        app = create_app({"KALAH_CACHE_DIR": str(folder / "answers"), "TESTING": True})
        app.extensions["kalah"].engines().prepare().join()  # as kalah_service.ops.gunicorn_conf
        client = app.test_client()
        query = "/v1/analysis?rules=kalah&houses=4&seeds=3&time_ms=2000&position="
        _path_of(client, query + "3333-0-3333-0-s")  # warm-up: the engines, the databases' start
        miss = _path_of(client, query + "3044-1-3333-0-s")  # one sowing in: never asked
        hit = _path_of(client, query + "3044-1-3333-0-s")
        return miss, hit
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]  # None removes the hook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quiet", action="store_true", help="print the two counts only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        miss, hit = request_paths(Path(folder))
    print(f"miss: {len(miss)} project modules")
    print(f"hit: {len(hit)} project modules")
    if not args.quiet:
        for label, modules in (("miss", miss), ("hit", hit)):
            print(f"\n{label}:")
            for module in modules:
                print(f"  {module}")


if __name__ == "__main__":
    main()
