"""Finding 7 of issue 13: slow clients. 20 sockets trickling a byte every 4 s held gunicorn's
threads and /livez failed 7 probes in a row. The shipped deployment puts nginx
(``deploy/k8s/nginx.conf``) in front of gunicorn: it reads each request whole before passing it
on. Here the shipped file runs (only its two addresses changed to free ports) in front of a
real gunicorn while 20 sockets trickle, and /livez is probed through it."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from figures import measured
from harness import ROOT, Gunicorn, RedisServer, free_port, http_status, wait_for

SHIPPED = ROOT / "deploy" / "k8s" / "nginx.conf"


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:  # the shipped deployment is tested, never skipped
        pytest.fail("nginx is not installed (Debian: apt-get install nginx)")
    return found


class Nginx:
    """The shipped nginx.conf, listening on a free port, in front of ``upstream``."""

    def __init__(self, upstream_port: int) -> None:
        self.port = free_port()
        self.prefix = Path(tempfile.mkdtemp(prefix="kalah-nginx-"))
        text = SHIPPED.read_text()
        assert "listen 8080;" in text and "server 127.0.0.1:8000;" in text
        text = text.replace("listen 8080;", f"listen 127.0.0.1:{self.port};")
        text = text.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream_port};")
        (self.prefix / "nginx.conf").write_text(text)
        self.process = subprocess.Popen(
            [nginx_binary(), "-p", str(self.prefix), "-c", "nginx.conf", "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(self.base + "/livez", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                time.sleep(0.05)
        raise RuntimeError(f"nginx did not start: {self.process.stderr}")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        shutil.rmtree(self.prefix, ignore_errors=True)


@pytest.fixture(scope="module")
def proxied(redis_server: RedisServer) -> Iterator[tuple[Nginx, Gunicorn]]:
    redis_server.flush()
    gunicorn = Gunicorn(
        {
            "KALAH_REDIS_URL": redis_server.url,
            "KALAH_EGDB_PATH": "off",
            "KALAH_TRUSTED_PROXIES": "1",
            "KALAH_THREADS": "4",  # few threads: what 20 trickling sockets exhausted
            "KALAH_ENGINES": "2",
        }
    )
    gunicorn.start()
    try:  # gunicorn is stopped even if nginx is missing or fails to start
        nginx = Nginx(gunicorn.port)
        try:
            yield nginx, gunicorn
        finally:
            nginx.close()
    finally:
        gunicorn.close()


def trickle(port: int, stop: threading.Event, sent: list[int]) -> None:
    """A request sent a byte every 4 s (a slowloris): never finished."""
    request = b'POST /v1/analysis HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{"position":'
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for byte in request:
            sock.sendall(bytes([byte]))
            sent[0] += 1
            if stop.wait(4.0):
                return


def test_slow_clients_do_not_block_livez_behind_the_shipped_proxy(
    proxied: tuple[Nginx, Gunicorn],
) -> None:
    nginx, _ = proxied
    stop = threading.Event()
    sent = [0]
    threads = [
        threading.Thread(target=trickle, args=(nginx.port, stop, sent), daemon=True)
        for _ in range(20)
    ]
    for thread in threads:
        thread.start()
    probes: list[float] = []
    try:
        time.sleep(1.0)  # every socket is open and has sent its first bytes
        deadline = time.monotonic() + 9  # past two trickled bytes per socket
        while time.monotonic() < deadline:
            started = time.perf_counter()
            # Without the proxy the trickling sockets hold every thread: the probe would wait
            # until they stop (they never do while the probes run) and time out.
            answer = requests.get(nginx.base + "/livez", timeout=60)
            probes.append(time.perf_counter() - started)
            assert answer.status_code == 200
            time.sleep(0.3)
    finally:
        stop.set()
    measured(
        f"20 sockets trickling through nginx: {len(probes)} /livez probes all 200, slowest "
        f"{max(probes):.3f} s ({sent[0]} bytes trickled)"
    )
    assert sent[0] >= 40  # the sockets trickled while every probe was answered


def test_the_proxy_passes_the_api_through_and_refuses_as_problems(
    proxied: tuple[Nginx, Gunicorn],
) -> None:
    nginx, _ = proxied
    answer = requests.post(
        nginx.base + "/v1/analysis",
        json={"position": "start", "rules": {"houses": 3, "seeds": 2}},
        headers={"X-Forwarded-For": "203.0.113.9"},  # a client's claim: replaced, not trusted
        timeout=10,
    )
    assert answer.status_code == 200 and answer.json()["exact"] is True
    too_large = requests.post(
        nginx.base + "/v1/batch",
        data=b"[" + b" " * (5 * 1024 * 1024) + b"]",
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert too_large.status_code == 413
    assert too_large.headers["Content-Type"] == "application/problem+json"
    assert json.loads(too_large.text)["field"] == "body"


def raw_exchange(port: int, request: bytes) -> tuple[int, str, bytes]:
    """``request`` sent whole on a fresh connection: the status, the Content-Type and the body
    (read until nginx closes, or up to its Content-Length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"nginx closed without an answer: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        pairs = (h.partition(":") for h in lines[1:])
        headers = {k.strip().lower(): v.strip() for k, _, v in pairs}
        while len(body) < int(headers.get("content-length", "0")):
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split()[1]), headers.get("content-type", ""), body


@pytest.mark.parametrize(
    ("request_bytes", "status", "field"),
    [
        pytest.param(b"GARBAGE\r\n\r\n", 400, "request", id="400-request-line"),
        pytest.param(b"GET /livez HTTP/1.1\r\n\r\n", 400, "request", id="400-no-host"),
        pytest.param(
            b"GET /livez HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, "request", id="400-header"
        ),
        pytest.param(
            b"POST /v1/play HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            400,
            "request",
            id="400-chunk-size",
        ),
        pytest.param(
            b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
            431,
            "headers",
            id="431-header",
        ),
        pytest.param(
            b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "url", id="414-uri"
        ),
        pytest.param(b"GET /livez HTTP/7.1\r\nHost: x\r\n\r\n", 505, "http-version", id="505"),
        pytest.param(
            b"POST /v1/play HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xyz\r\n\r\n",
            501,
            "Transfer-Encoding",
            id="501-coding",
        ),
        pytest.param(b"TRACE / HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method", id="405-trace"),
        pytest.param(b"GET /.problems/400 HTTP/1.1\r\nHost: x\r\n\r\n", 404, None, id="404-page"),
        pytest.param(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 404, None, id="404-metrics"),
    ],
)
def test_nginxs_own_errors_are_problems(
    proxied: tuple[Nginx, Gunicorn], request_bytes: bytes, status: int, field: str | None
) -> None:
    """Issue 33, finding 10: nginx's own 400 (and its other errors) were HTML pages."""
    nginx, _ = proxied
    code, content_type, body = raw_exchange(nginx.port, request_bytes)
    assert (code, content_type) == (status, "application/problem+json"), body[:300]
    problem = json.loads(body)
    assert problem["status"] == status and problem["field"] == field and problem["title"]


def test_40_sockets_trickling_headers_through_the_proxy(proxied: tuple[Nginx, Gunicorn]) -> None:
    """Issue 33, finding 5: 40 sockets each sending a header byte every 4 s kept /livez of a
    bare gunicorn timing out. ``kalah serve`` refuses a non-loopback address unless told a
    proxy is in front (tests/service/test_cli_serve.py); behind the shipped one, /livez answers
    every probe throughout (a bounded loop, loopback only)."""
    nginx, _ = proxied
    stop = threading.Event()
    sent = [0]

    def trickle_headers() -> None:
        request = b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 64
        with socket.create_connection(("127.0.0.1", nginx.port), timeout=30) as sock:
            for byte in request:
                sock.sendall(bytes([byte]))
                sent[0] += 1
                if stop.wait(4.0):
                    return

    threads = [threading.Thread(target=trickle_headers, daemon=True) for _ in range(40)]
    for thread in threads:
        thread.start()
    statuses: list[int] = []
    try:
        time.sleep(1.0)
        deadline = time.monotonic() + 9  # past two trickled bytes per socket
        while time.monotonic() < deadline:
            statuses.append(requests.get(nginx.base + "/livez", timeout=30).status_code)
            time.sleep(0.3)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    measured(f"40 sockets trickling headers through nginx: {len(statuses)} /livez probes")
    assert statuses and set(statuses) == {200} and sent[0] >= 80


def _get_from(source: str, port: int, path: str) -> tuple[int, dict[str, object]]:
    """GET ``path`` on 127.0.0.1:``port`` from the local address ``source`` (127.0.0.0/8 is
    all this machine's: each source is a different client to nginx)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    finally:
        conn.close()


def test_kalah_serve_behind_proxy_limits_each_client_by_the_proxys_hop(tmp_path: Path) -> None:
    """Finding 47.4: behind the shipped nginx, ``kalah serve --behind-proxy`` (KALAH_LIMITS
    left at auto, no KALAH_TRUSTED_PROXIES) counted every client against nginx's own address,
    one bucket for all, and a relay to gunicorn's port without a forwarding header (socat,
    ssh -L) was not limited at all. Now the flag turns the limits on and trusts one hop: two
    clients of nginx have a bucket each, the header-less relay is limited, and the start line
    says so."""
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("KALAH_LIMITS", "KALAH_TRUSTED_PROXIES", "KALAH_REDIS_URL")
    }
    env.update(
        {
            "KALAH_EGDB_PATH": "off",
            "KALAH_LIMIT_ANONYMOUS": "1/minute",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "KALAH_CACHE_DIR": str(tmp_path / "answers"),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        }
    )
    out = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from kalah_core.cli import main; sys.exit(main())",
            "serve",
            "--port",
            str(port),
            "--workers",
            "1",
            "--behind-proxy",
        ],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: http_status(f"http://127.0.0.1:{port}/livez") == 200, 120, "serve")
        nginx = Nginx(port)
        try:
            first = _get_from("127.0.0.2", nginx.port, "/v1/rules")
            again = _get_from("127.0.0.2", nginx.port, "/v1/rules")
            other = _get_from("127.0.0.3", nginx.port, "/v1/rules")
        finally:
            nginx.close()
        relayed = _get_from("127.0.0.1", port, "/v1/rules")  # no forwarding header
    finally:
        serve.terminate()
        serve.wait(30)
        out.close()
    log = (tmp_path / "serve.log").read_text(errors="replace")
    assert first[0] == 200 and first[1]["rate_limits"]["applies"] is True  # type: ignore[index]
    assert again[0] == 429
    assert other[0] == 200, "the second client of nginx shares the first one's bucket"
    assert relayed[0] == 200 and relayed[1]["rate_limits"]["applies"] is True  # type: ignore[index]
    assert "rate limits: on: no caller is exempt; a client is the address 1 proxy hop" in log
