"""Issue 47, finding 4: relays and forwarding headers (api/edge/forwarding.py, api/ops/serve.py).

``X-Forwarded-For`` and ``Forwarded`` (RFC 7239) are read alike: for the client's address
behind ``KALAH_TRUSTED_PROXIES`` hops, for ``KALAH_LIMITS=auto``'s loopback exemption and for
``/metrics``. ``--behind-proxy`` turns the limits on and trusts one hop unless told otherwise,
and ``kalah serve`` says in one line who is exempt. Through the test client with REMOTE_ADDR
and headers; the real server behind the shipped nginx is in test_nginx_proxy.py."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from flask import Flask

from kalah_service import create_app
from kalah_service.base.config import load_settings
from kalah_service.edge.forwarding import forwarded_for
from kalah_service.ops.serve import exemption, proxy_environment

RULES = "/v1/rules"
LOCAL = {"REMOTE_ADDR": "127.0.0.1"}


def app_with(**config: Any) -> Flask:
    """An app whose limits store is its own (the session's shared one holds other tests'
    charges to the same addresses)."""
    return create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": "",
            "KALAH_CACHE_DIR": tempfile.mkdtemp(prefix="kalah-relays-test-"),
            "KALAH_LIMIT_ANONYMOUS": "1/minute",
            **config,
        }
    )


def applies(app: Flask, headers: dict[str, str], environ: dict[str, str] = LOCAL) -> bool:
    answer = app.test_client().get(RULES, headers=headers, environ_base=environ)
    assert answer.status_code == 200
    return bool(answer.get_json()["rate_limits"]["applies"])


def test_forwarded_nodes_are_parsed_as_rfc_7239_writes_them() -> None:
    value = (
        'for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711", '
        'for="198.51.100.17:8080", for=unknown, for=_hidden, proto=https'
    )
    assert forwarded_for(value) == [
        "192.0.2.60",
        "2001:db8:cafe::17",
        "198.51.100.17",
        "unknown",
        "_hidden",
    ]


@pytest.mark.parametrize(
    "headers",
    [
        {"Forwarded": "for=198.51.100.1"},
        {"Forwarded": "proto=https"},
        {"X-Forwarded-For": "198.51.100.1"},
        {"X-Forwarded-For": ""},  # even an empty header is a relay's
    ],
    ids=["forwarded", "forwarded-without-for", "x-forwarded-for", "empty-x-forwarded-for"],
)
def test_auto_never_exempts_a_request_with_a_forwarding_header(headers: dict[str, str]) -> None:
    app = app_with(KALAH_LIMITS="auto")
    assert not applies(app, {})  # a person on their own machine
    assert applies(app, headers)


@pytest.mark.parametrize("trusted", ["0", "1"])
def test_auto_exempts_only_a_loopback_peer(trusted: str) -> None:
    """The exemption looks at the connection's own address, whatever a trusted hop names."""
    app = app_with(
        KALAH_LIMITS="auto", KALAH_TRUSTED_PROXIES=trusted, KALAH_LIMIT_ANONYMOUS="100/minute"
    )
    assert applies(app, {}, {"REMOTE_ADDR": "192.0.2.7"})
    assert applies(app, {"X-Forwarded-For": "127.0.0.1"}, {"REMOTE_ADDR": "192.0.2.7"})
    assert applies(app, {"Forwarded": "for=127.0.0.1"}, {"REMOTE_ADDR": "192.0.2.7"})


def test_a_trusted_hop_in_forwarded_names_the_client_as_in_x_forwarded_for() -> None:
    """Finding 47.4: behind a proxy that writes ``Forwarded``, every client shared the proxy's
    bucket. Each client has its own bucket now, as behind one that writes X-Forwarded-For."""
    client = app_with(KALAH_LIMITS="on", KALAH_TRUSTED_PROXIES="1").test_client()
    for header, first in (("Forwarded", 1), ("X-Forwarded-For", 3)):
        for client_address in (f"198.51.100.{first}", f"198.51.100.{first + 1}"):
            value = f"for={client_address}" if header == "Forwarded" else client_address
            assert client.get(RULES, headers={header: value}).status_code == 200, header
    # one client, whichever header names it
    assert client.get(RULES, headers={"Forwarded": 'for="[2001:db8::5]:443"'}).status_code == 200
    assert client.get(RULES, headers={"X-Forwarded-For": "2001:db8::5"}).status_code == 429
    assert client.get(RULES, headers={"Forwarded": "for=198.51.100.3"}).status_code == 429


def test_headers_that_disagree_at_the_trusted_hop_count_against_the_peer() -> None:
    """A proxy writes one of the headers and a client can send the other: where they name
    different clients, neither is trusted. A client rotating a forged ``Forwarded`` behind a
    proxy that sets X-Forwarded-For does not get a fresh bucket each time."""
    client = app_with(KALAH_LIMITS="on", KALAH_TRUSTED_PROXIES="1").test_client()
    real = {"X-Forwarded-For": "198.51.100.9"}
    assert client.get(RULES, headers={**real, "Forwarded": "for=192.0.2.1"}).status_code == 200
    assert client.get(RULES, headers={**real, "Forwarded": "for=192.0.2.2"}).status_code == 429
    # the same client without the forged header still has its own bucket
    assert client.get(RULES, headers=real).status_code == 200
    # and headers that agree name their client
    agreeing = {"X-Forwarded-For": "198.51.100.10", "Forwarded": "for=198.51.100.10"}
    assert client.get(RULES, headers=agreeing).status_code == 200


@pytest.mark.parametrize(
    ("peer", "headers", "status"),
    [
        ("127.0.0.1", {}, 200),
        ("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, 403),
        ("127.0.0.1", {"Forwarded": "for=203.0.113.9"}, 403),
        ("127.0.0.1", {"Forwarded": 'for="[2001:db8::9]:80"'}, 403),
        ("127.0.0.1", {"Forwarded": "for=unknown"}, 403),
        ("127.0.0.1", {"Forwarded": "for=127.0.0.1"}, 200),
        ("203.0.113.5", {"Forwarded": "for=127.0.0.1"}, 403),
        ("203.0.113.5", {"X-Forwarded-For": "127.0.0.1"}, 403),
    ],
)
@pytest.mark.parametrize("trusted", ["0", "1"])
def test_metrics_judge_every_address_of_both_headers(
    peer: str, headers: dict[str, str], status: int, trusted: str
) -> None:
    """Finding 47.4: ``/metrics`` looked at X-Forwarded-For only, so a public client behind a
    proxy that writes ``Forwarded`` read them."""
    app = app_with(KALAH_TRUSTED_PROXIES=trusted)
    answer = app.test_client().get("/metrics", headers=headers, environ_base={"REMOTE_ADDR": peer})
    assert answer.status_code == status


def test_behind_proxy_turns_limits_on_and_trusts_one_hop_unless_told_otherwise() -> None:
    assert proxy_environment({}, behind_proxy=False) == {}
    env = proxy_environment({"PATH": "/bin"}, behind_proxy=True)
    assert env == {"PATH": "/bin", "KALAH_LIMITS": "on", "KALAH_TRUSTED_PROXIES": "1"}
    assert proxy_environment({"KALAH_LIMITS": "auto"}, True)["KALAH_LIMITS"] == "on"
    told = {"KALAH_LIMITS": "off", "KALAH_TRUSTED_PROXIES": "2"}
    assert proxy_environment(told, behind_proxy=True) == told


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "loopback address without an X-Forwarded-For or Forwarded header"),
        ({"KALAH_LIMITS": "on"}, "no caller is exempt; a client is its connection's address"),
        (
            {"KALAH_LIMITS": "on", "KALAH_TRUSTED_PROXIES": "1"},
            "no caller is exempt; a client is the address 1 proxy hop back",
        ),
        ({"KALAH_REDIS_URL": "redis://localhost:1/0"}, "auto, with a state store: no caller"),
        ({"KALAH_LIMITS": "off"}, "every caller is exempt"),
    ],
)
def test_serve_says_in_one_line_who_is_exempt(environ: dict[str, str], expected: str) -> None:
    line = exemption(load_settings(environ=environ))
    assert expected in line and "\n" not in line
    if not environ:  # auto, embedded: the relay caveat is said where it applies
        assert "socat" in line and "--behind-proxy" in line
