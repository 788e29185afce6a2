"""Issue 33, findings 7 and 10: what a real gunicorn answers to requests broken on the wire.

Raw sockets against ``kalah serve``'s gunicorn (``api/ops/gunicorn_conf.py``, the embedded
default): a malformed chunked body was a 500 on every POST endpoint (gunicorn raises its own
``ParseException`` from ``wsgi.input``), and what gunicorn refuses before the app sees the
request (a long request line, large headers, a malformed request line or header, an unknown
transfer coding) was an HTML page. Each must be a 4xx (or 501) problem+json naming the part of
the request at fault.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Gunicorn

POSTS = ("/v1/analysis", "/v1/batch", "/v1/games/analysis", "/v1/play")

MALFORMED_CHUNKS = {
    "invalid chunk size": b"zz\r\n{}\r\n0\r\n\r\n",
    "missing terminator": b"2\r\n{}XX0\r\n\r\n",
    "bad extension": b"2;\x01bad\r\n{}\r\n0\r\n\r\n",
}


@pytest.fixture(scope="module")
def server() -> Iterator[Gunicorn]:
    gunicorn = Gunicorn({"KALAH_REDIS_URL": "", "KALAH_EGDB_PATH": "off"}, workers=1)
    gunicorn.start()
    try:
        yield gunicorn
    finally:
        gunicorn.close()


def exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` whole on a fresh connection; the status, headers and body of the
    answer (read until the server closes, or up to its Content-Length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"the server closed without an answer: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        pairs = (h.partition(":") for h in lines[1:])
        headers = {k.strip().lower(): v.strip() for k, _, v in pairs}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split()[1]), headers, body


def problem(answer: tuple[int, dict[str, str], bytes], status: int, field: str) -> dict[str, Any]:
    code, headers, body = answer
    assert code == status, (code, body[:300])
    assert headers["content-type"] == "application/problem+json", (headers, body[:300])
    decoded: dict[str, Any] = json.loads(body)
    assert decoded["status"] == status and decoded["field"] == field, decoded
    assert decoded["title"] and decoded["detail"]
    return decoded


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("kind", MALFORMED_CHUNKS)
def test_a_malformed_chunked_body_is_a_400_naming_the_body(
    server: Gunicorn, path: str, kind: str
) -> None:
    request = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode() + MALFORMED_CHUNKS[kind]
    body = problem(exchange(server.port, request), 400, "body")
    assert body["type"] == "/problems/malformed-body" and "chunked" in body["detail"]


def test_a_well_formed_chunked_body_is_still_answered(server: Gunicorn) -> None:
    payload = json.dumps({"position": "start", "rules": {"houses": 3, "seeds": 2}}).encode()
    request = (
        b"POST /v1/analysis HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + b"%x\r\n%s\r\n0\r\n\r\n"
        % (len(payload), payload)
    )
    status, _, body = exchange(server.port, request)
    assert status == 200 and json.loads(body)["exact"] is True


@pytest.mark.parametrize(
    ("request_bytes", "status", "field"),
    [
        pytest.param(
            b"GET /v1/analysis?position=" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            414,
            "url",
            id="414-request-line",
        ),
        pytest.param(
            b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
            431,
            "headers",
            id="431-header-size",
        ),
        pytest.param(
            b"GET /livez HTTP/1.1\r\nHost: x\r\n"
            + b"".join(b"X-%d: 1\r\n" % i for i in range(120))
            + b"\r\n",
            431,
            "headers",
            id="431-header-count",
        ),
        pytest.param(b"GARBAGE\r\n\r\n", 400, "request-line", id="400-request-line"),
        pytest.param(
            b"GET /livez HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
            400,
            "headers",
            id="400-header",
        ),
        pytest.param(b"GET /livez HTTP/7.1\r\nHost: x\r\n\r\n", 400, "http-version", id="400-ver"),
        pytest.param(
            b"POST /v1/play HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xyz\r\n\r\n",
            501,
            "Transfer-Encoding",
            id="501-coding",
        ),
    ],
)
def test_gunicorns_own_refusals_are_problems(
    server: Gunicorn, request_bytes: bytes, status: int, field: str
) -> None:
    body = problem(exchange(server.port, request_bytes), status, field)
    assert body["type"] == "about:blank" and len(body["detail"]) <= 240
    assert "<html" not in json.dumps(body)


def test_the_server_still_answers_after_the_refusals(server: Gunicorn) -> None:
    status, _, body = exchange(
        server.port, b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert status == 200 and json.loads(body) == {"status": "ok"}
    assert "internal error" not in server.tail(20000)
