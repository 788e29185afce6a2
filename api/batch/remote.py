"""``kalah batch --server URL``: the same batch through a running service's ``/v1/batch``.

The items are sent in pieces (each one ``POST /v1/batch``), the jobs polled for progress, and
the results fetched as NDJSON, in input order. Standard library HTTP only (the CLI needs no
client package).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kalah_core.errors import KalahError

POLL_S = 0.25


class ServerError(KalahError):
    """The server answered with a problem (or not at all)."""


def _request(
    url: str,
    *,
    body: Any = None,
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


def run_remote(
    server: str,
    items: Sequence[Mapping[str, Any]],
    rules: object,
    limits: Mapping[str, Any],
    *,
    piece: int = 1000,
    key: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[bytes]:
    """Every item's result line, in input order. ``key``: the API key sent as a bearer token
    (a batch that becomes a job needs one)."""
    base = server.rstrip("/")
    pieces: list[tuple[str | None, list[bytes]]] = []
    for start in range(0, len(items), piece):
        body = {"positions": list(items[start : start + piece]), "rules": rules, "limits": limits}
        status, headers, content = _request(base + "/v1/batch", body=body, key=key)
        if status == 202:
            pieces.append((base + headers["Location"], []))
        else:
            results = json.loads(content)["results"]
            pieces.append((None, [json.dumps(r).encode() for r in results]))
            if progress is not None:
                progress(len(results))
    reported = 0
    for url, _ in pieces:
        if url is None:
            continue
        while True:
            _, _, content = _request(url + "?limit=1", key=key)
            job = json.loads(content)
            if progress is not None:
                progress(job["progress"]["done"] - reported)
            reported = job["progress"]["done"]
            if job["status"] == "failed":
                raise ServerError(f"job {job['id']} failed: {job['error']}")
            if job["status"] == "finished":
                break
            time.sleep(POLL_S)
        reported = 0
    lines: list[bytes] = []
    for url, inline in pieces:
        if url is None:
            lines += inline
            continue
        _, _, content = _request(url, accept="application/x-ndjson", key=key)
        lines += content.splitlines()
    return lines
