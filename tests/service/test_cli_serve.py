"""Issue 33, finding 5: ``kalah serve`` (the README's first command) exposed bare gunicorn,
where 40 sockets sending a header byte every 4 s kept ``/livez`` timing out. It now refuses
an address other machines can reach unless ``--behind-proxy`` says a buffering proxy is in
front (behind the shipped nginx the same attack is harmless:
``tests/system/test_nginx_proxy.py::test_40_sockets_trickling_headers_through_the_proxy``).
Everything here stays on loopback: the refused address is never bound, and the allowed one
is a documentation address (192.0.2.1) this machine does not have, so gunicorn fails to bind
it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kalah_service.serve import exposed

ROOT = Path(__file__).resolve().parents[2]
KALAH = [sys.executable, "-c", "import sys; from kalah_core.cli import main; sys.exit(main())"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_is_not_exposed(host: str) -> None:
    assert not exposed(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.1", "2001:db8::1", "no.such.host."])
def test_every_other_address_is_exposed(host: str) -> None:
    assert exposed(host)


def _serve(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KALAH, "serve", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.system
@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_kalah_serve_refuses_every_interface_without_a_proxy(host: str) -> None:
    port = free_port()
    done = _serve("--host", host, "--port", str(port), "--workers", "1")
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    assert "--behind-proxy" in done.stderr and "deploy/k8s/nginx.conf" in done.stderr
    assert "Listening at" not in done.stderr + done.stdout
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 2):
        pass  # nothing was bound


@pytest.mark.system
def test_behind_proxy_lets_kalah_serve_try_the_address() -> None:
    """With the flag the check is passed and gunicorn itself tries to bind (and fails: the
    address is not this machine's)."""
    done = _serve(
        "--host", "192.0.2.1", "--port", str(free_port()), "--workers", "1", "--behind-proxy"
    )
    assert done.returncode != 0
    assert "refusing" not in done.stderr
    assert "192.0.2.1" in done.stderr and "Can't connect" in done.stderr, done.stderr[-2000:]
