"""Issue 47, finding 3: every store fault has one policy (docs/deploy.md, "Store faults").

The answer cache is optional: when it fails the answer is still served and charged, and
``/readyz`` says ``degraded``. The job store, the rate limits' counters and the key store are
not: when one fails its routes are a 503 problem with ``Retry-After`` (never a 500) and
``/readyz`` is a 503 naming it. Each fault is performed for real: a store file overwritten with
garbage, a full filesystem (a small tmpfs, mounted here: the tests run as root), a Redis that
answers errors (out of memory) or a key record that cannot be read.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask
from harness import RedisServer

from kalah_service import create_app
from kalah_service.ratelimit.buckets import Buckets
from kalah_service.ratelimit.costs import search_cost

GARBAGE = b"this is not an SQLite database, it was overwritten\n" * 200

JOB_ID = "0" * 32


def uncached(n: int) -> dict[str, Any]:
    """Query parameters of an analysis no other request of a test asks: the start of a
    distinct small board, solved at once (an exact answer is kept in the process's memory as
    well as in the store, whatever its limits)."""
    return {"position": "start", "houses": 2, "seeds": n + 1}


def job_body(items: int = 3) -> dict[str, Any]:
    """A batch above the inline maximum the apps here set (1): it becomes a job."""
    positions = [{"position": "start", "rules": {"houses": 3, "seeds": s}} for s in range(items)]
    return {"positions": positions}


def corrupt(path: Path) -> None:
    """Overwrite the SQLite file ``path`` with garbage; its write-ahead log goes (as after a
    clean shutdown), else SQLite would read the pages the log still holds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(GARBAGE)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def embedded_app(folder: Path, **config: Any) -> Flask:
    return create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": "",
            "KALAH_CACHE_DIR": str(folder / "answers"),
            "KALAH_EGDB_PATH": "off",
            "KALAH_BATCH_INLINE_MAX": 1,
            "KALAH_LIMITS": "on",
            **config,
        }
    )


def assert_503(response: Any, words: str = "") -> None:
    """A store fault's answer: a 503 not-ready problem with Retry-After."""
    body = response.get_json() if hasattr(response, "get_json") else response.json()
    assert response.status_code == 503, (response.status_code, body)
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert body["type"] == "/problems/not-ready", body
    assert int(response.headers["Retry-After"]) >= 1
    assert words in body["detail"], body


def assert_served_and_charged(response: Any) -> None:
    """A fresh answer (the failing cache could not have given it), charged its search."""
    body = response.get_json() if hasattr(response, "get_json") else response.json()
    assert response.status_code == 200, (response.status_code, body)
    assert body["cached"] is False and body["exact"] is True
    spent = min(body["time_ms"], body["limits"]["time_ms"])
    assert int(response.headers["Kalah-Cost"]) == 1 + search_cost(spent)


def not_ready(response: Any) -> set[str]:
    """The checks a 503 from /readyz names as failed."""
    body = response.get_json() if hasattr(response, "get_json") else response.json()
    assert response.status_code == 503, body
    return {name for name, check in body["checks"].items() if not check["ok"]}


# -- a corrupt store file (the embedded default, the test client) --------------------------


def test_a_corrupt_answer_store_still_answers_and_charges(tmp_path: Path) -> None:
    corrupt(tmp_path / "answers" / "cache.db")
    client = embedded_app(tmp_path).test_client()
    for n in range(2):
        assert_served_and_charged(client.get("/v1/analysis", query_string=uncached(n)))
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.get_json()
    assert ready.get_json()["status"] == "degraded"
    assert ready.get_json()["checks"]["cache"]["ok"] is False
    assert str(tmp_path) not in ready.get_data(as_text=True)  # no path shown


def test_a_corrupt_limits_store_is_a_503_and_its_sync_thread_survives(tmp_path: Path) -> None:
    limits = tmp_path / "answers-limits.sqlite"
    corrupt(limits)
    app = embedded_app(tmp_path)
    client = app.test_client()
    # A search's reservation is written at once; any other request is refused from then on.
    assert_503(client.get("/v1/analysis", query_string=uncached(1)), "rate limits")
    assert_503(client.get("/v1/rules"), "rate limits")
    assert "limits" in not_ready(client.get("/readyz"))
    assert client.get("/livez").status_code == 200  # not limited: served

    # Charges waiting for the counters; the sync thread keeps trying them (each try fails
    # with sqlite3.DatabaseError) and adds them once the file is repaired.
    buckets: Buckets = app.extensions["kalah_limits"]
    window = buckets.key("ip:127.0.0.1", _first_item(app))
    buckets.add("ip:127.0.0.1", (_first_item(app),), 7)
    seen = buckets.failures
    wait_until(lambda: buckets.failures >= seen + 2, "the sync thread to try the counters twice")
    assert any(t.name == "rl-sync" and t.is_alive() for t in threading.enumerate())
    limits.unlink()  # repaired: a new file is made
    wait_until(lambda: buckets.failure is None, "the sync thread to find the counters back")
    wait_until(lambda: _total(limits, window) == 7, "the waiting charges to be added")
    assert client.get("/v1/rules").status_code == 200
    assert client.get("/readyz").status_code == 200


def _first_item(app: Flask) -> Any:
    from limits import parse_many

    return parse_many(app.extensions["kalah"].settings.tier_limit("anonymous"))[0]


def _total(path: Path, key: str) -> int | None:
    with contextlib.closing(sqlite3.connect(path, timeout=5)) as connection:
        row = connection.execute("SELECT total FROM windows WHERE key = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def wait_until(condition: Any, what: str) -> None:
    """Wait for ``condition``, named ``what``: no time is judged; a wait that never ends is
    failed by pytest-timeout (pyproject.toml), with the stacks."""
    pause = threading.Event()
    while not condition():
        pause.wait(0.05)


def test_a_corrupt_job_store_is_a_503(tmp_path: Path) -> None:
    corrupt(tmp_path / "answers-jobs" / "cache.db")
    client = embedded_app(tmp_path, KALAH_LIMITS="off").test_client()
    assert_503(client.post("/v1/batch", json=job_body()), "job store")
    assert_503(client.get(f"/v1/jobs/{JOB_ID}"), "job store")
    assert_503(client.delete(f"/v1/jobs/{JOB_ID}"), "job store")
    assert not_ready(client.get("/readyz")) == {"jobs"}
    # Analyses do not need the job store.
    assert client.get("/v1/analysis", query_string=uncached(2)).status_code == 200


# -- a full disk (a small tmpfs) -----------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "4m") -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:  # a real full disk or nothing: never a skip
        pytest.fail(f"mounting a tmpfs needs root: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(folder: Path) -> None:
    """Write to ``folder`` until its filesystem has not a byte left (ENOSPC)."""
    with (folder / "filler").open("wb", buffering=0) as filler:
        for size in (1 << 16, 1 << 12, 1 << 8, 1):
            while True:
                try:
                    filler.write(b"\0" * size)
                except OSError as error:
                    assert error.errno == errno.ENOSPC, error
                    break


# -- Redis: a store that answers errors, a key record that cannot be read ------------------


def out_of_memory(server: RedisServer) -> None:
    """Every write to ``server`` is refused with an OOM error from now on (reads work)."""
    client = redis.Redis.from_url(server.url)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)


# -- through a real gunicorn ---------------------------------------------------------------
