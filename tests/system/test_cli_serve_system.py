"""The system tests of tests/service/test_cli_serve.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import socket

import pytest
from test_cli_serve import _serve, free_port


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_kalah_serve_refuses_every_interface_without_a_proxy(host: str) -> None:
    port = free_port()
    done = _serve("--host", host, "--port", str(port), "--workers", "1")
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    assert "--behind-proxy" in done.stderr and "deploy/k8s/nginx.conf" in done.stderr
    assert "Listening at" not in done.stderr + done.stdout
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 2):
        pass  # nothing was bound


def test_behind_proxy_lets_kalah_serve_try_the_address() -> None:
    """With the flag the check is passed and gunicorn itself tries to bind (and fails: the
    address is not this machine's)."""
    done = _serve(
        "--host", "192.0.2.1", "--port", str(free_port()), "--workers", "1", "--behind-proxy"
    )
    assert done.returncode != 0
    assert "refusing" not in done.stderr
    assert "192.0.2.1" in done.stderr and "Can't connect" in done.stderr, done.stderr[-2000:]
