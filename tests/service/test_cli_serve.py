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

from kalah_service.ops.serve import exposed

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
