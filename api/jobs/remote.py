"""``kalah batch --server URL``: the same batch through a running service's ``/v1/batch``.

The items are sent in pieces (each one ``POST /v1/batch``), the jobs polled for progress, and
the results fetched as NDJSON, in input order. A server without jobs gets pieces small enough
to answer inline (its limits from ``GET /v1/rules``). Standard library HTTP only (the CLI needs no
client package).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kalah_core.errors import KalahError

POLL_S = 0.25
MAX_OUTSTANDING = 4
"""Jobs of one caller queued or running at once: the server's limit
(:data:`kalah_service.jobs.store.MAX_UNFINISHED_JOBS`)."""


class ServerError(KalahError):
    """The server answered with a problem (or not at all)."""


def _request(
    url: str,
    *,
    body: object = None,
    accept: str = "application/json",
    key: str | None = None,
    timeout: float = 600,
) -> tuple[int, dict[str, str], bytes]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": accept}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        try:
            problem = json.loads(detail)
            detail = f"{problem.get('detail')} (field {problem.get('field')})"
        except ValueError:
            pass
        raise ServerError(f"{url}: HTTP {error.code}: {detail}") from None
    except OSError as error:
        raise ServerError(f"{url}: {error}") from None


def _split(
    base: str,
    items: Sequence[Mapping[str, Any]],
    limits: Mapping[str, Any],
    piece: int,
    key: str | None,
) -> list[list[Mapping[str, Any]]]:
    """The pieces to send: of ``piece`` items to a server that will run them as jobs; to one
    that will not (no jobs, or jobs need a key and there is none: ``GET /v1/rules``), pieces
    it answers inline: at most its ``batch_inline_max`` items whose budgets add up to at most
    its ``max_time_ms``."""
    _, _, content = _request(base + "/v1/rules")
    server = json.loads(content)["limits"]
    if server.get("batch_jobs", False) and (key or not server.get("batch_jobs_need_key", True)):
        return [list(items[i : i + piece]) for i in range(0, len(items), piece)]
    most, budget = max(1, server["batch_inline_max"]), server["max_time_ms"]
    shared = limits.get("time_ms", server["default_time_ms"])
    parts: list[list[Mapping[str, Any]]] = [[]]
    spent = 0
    for item in items:
        own = item.get("limits") if isinstance(item, Mapping) else None
        cost = (own or {}).get("time_ms", shared)
        if parts[-1] and (len(parts[-1]) >= most or spent + cost > budget):
            parts.append([])
            spent = 0
        parts[-1].append(item)
        spent += cost
    return parts if parts[-1] else []


def run_remote(
    server: str,
    items: Sequence[Mapping[str, Any]],
    rules: object,
    limits: Mapping[str, Any],
    *,
    piece: int = 1000,
    key: str | None = None,
    progress: Callable[[int], object] | None = None,
) -> list[bytes]:
    """Every item's result line, in input order. ``key``: the API key sent as a bearer token
    (a batch that becomes a job needs one). At most :data:`MAX_OUTSTANDING` jobs are queued or
    running at once (the server refuses more of one caller): a piece waits for the oldest."""
    base = server.rstrip("/")
    pieces: list[tuple[str | None, list[bytes]]] = []
    outstanding: deque[str] = deque()

    def finish(url: str) -> None:
        reported = 0
        while True:
            _, _, content = _request(url + "?limit=1", key=key)
            job = json.loads(content)
            if progress is not None:
                progress(job["progress"]["done"] - reported)
            reported = job["progress"]["done"]
            if job["status"] in ("failed", "cancelled"):
                raise ServerError(f"job {job['id']} {job['status']}: {job['error']}")
            if job["status"] == "finished":
                return
            time.sleep(POLL_S)

    for part in _split(base, items, limits, piece, key):
        while len(outstanding) >= MAX_OUTSTANDING:
            finish(outstanding.popleft())
        body = {"positions": part, "rules": rules, "limits": limits}
        status, headers, content = _request(base + "/v1/batch", body=body, key=key)
        if status == 202:
            pieces.append((base + headers["Location"], []))
            outstanding.append(base + headers["Location"])
        else:
            results = json.loads(content)["results"]
            pieces.append((None, [json.dumps(r).encode() for r in results]))
            if progress is not None:
                progress(len(results))
    while outstanding:
        finish(outstanding.popleft())
    lines: list[bytes] = []
    for url, inline in pieces:
        if url is None:
            lines += inline
            continue
        _, _, content = _request(url, accept="application/x-ndjson", key=key)
        lines += content.splitlines()
    return lines
