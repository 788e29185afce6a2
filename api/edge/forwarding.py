"""Forwarding headers: ``X-Forwarded-For`` and ``Forwarded`` (RFC 7239) read alike.

A proxy adds the address it got a request from to one of the two headers (nginx and most
others to ``X-Forwarded-For``, some to ``Forwarded``'s ``for=``). Everywhere the service
looks at forwarding, it reads both:

- ``KALAH_LIMITS=auto`` exempts a loopback caller only when the request carries neither
  header (:func:`forwarded`);
- ``/metrics`` checks every address a request came through: the peer and every entry of both
  headers (:func:`hops`);
- with ``KALAH_TRUSTED_PROXIES=N`` the client is the address ``N`` hops back
  (werkzeug's ``ProxyFix`` reads ``X-Forwarded-For``; :class:`ForwardedFor` gives it
  ``Forwarded``'s chain when that is the only header). When both headers are there and
  name different clients at that hop, the service cannot tell which one its proxy wrote (a
  client can send either), so it trusts neither and counts the request against the peer.

``Forwarded`` is parsed with werkzeug's header parsers (its quoted strings and parameters);
a ``for=`` node keeps its address without port or brackets, an obfuscated or ``unknown``
node stays as written (never inside a network).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from werkzeug.http import parse_list_header, parse_options_header

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

RAW = "kalah.forwarding"
"""The environ key under which :class:`ForwardedFor` keeps the request's forwarding as it
arrived: the peer and both headers, before any proxy fix rewrote them."""

HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED")


def forwarded_for(value: str) -> list[str]:
    """The ``for=`` nodes of a ``Forwarded`` header, first hop first: an address (without
    port or brackets) where the node is one, else the node as written."""
    nodes = []
    for element in parse_list_header(value):
        _, params = parse_options_header("_;" + element)
        node = params.get("for")
        if node is not None:
            nodes.append(_address(node))
    return nodes


def _address(node: str) -> str:
    node = node.strip()
    if node.startswith("["):  # "[v6]" or "[v6]:port"
        inner = node[1:].split("]", 1)[0]
        return inner if _is_ip(inner) else node
    if node.count(":") == 1:  # "v4:port"
        host = node.split(":", 1)[0]
        return host if _is_ip(host) else node
    return node


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _entries(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _raw(environ: Mapping[str, Any]) -> Mapping[str, Any]:
    """The forwarding as the request arrived (before ProxyFix and :class:`ForwardedFor`)."""
    found = environ.get(RAW)
    if found is not None:
        return found  # type: ignore[no-any-return]  # a dict this module stored
    original = environ.get("werkzeug.proxy_fix.orig") or {}
    return {
        "REMOTE_ADDR": original.get("REMOTE_ADDR", environ.get("REMOTE_ADDR")),
        "HTTP_X_FORWARDED_FOR": original.get(
            "HTTP_X_FORWARDED_FOR", environ.get("HTTP_X_FORWARDED_FOR")
        ),
        "HTTP_FORWARDED": environ.get("HTTP_FORWARDED"),
    }


def forwarded(environ: Mapping[str, Any]) -> bool:
    """Whether the request came with either forwarding header (even an empty one)."""
    raw = _raw(environ)
    return any(raw.get(name) is not None for name in HEADERS)


def hops(environ: Mapping[str, Any]) -> list[str]:
    """Every address a request came through, as it arrived: the peer, each entry of
    ``X-Forwarded-For`` and each ``for=`` node of ``Forwarded``."""
    raw = _raw(environ)
    forwarded_value = raw.get("HTTP_FORWARDED")
    return [
        raw.get("REMOTE_ADDR") or "",
        *_entries(raw.get("HTTP_X_FORWARDED_FOR")),
        *(forwarded_for(forwarded_value) if forwarded_value else []),
    ]


def _at(chain: list[str], trusted: int) -> str | None:
    return chain[-trusted] if len(chain) >= trusted else None


class ForwardedFor:
    """WSGI middleware, outside werkzeug's ``ProxyFix``: keeps the forwarding as it arrived
    (:data:`RAW`), and hands ``ProxyFix`` one chain: ``Forwarded``'s when it is the only
    header, none when the two headers disagree at the trusted hop (see the module's text)."""

    def __init__(self, app: WSGIApplication, trusted: int) -> None:
        self.app = app
        self.trusted = trusted

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        environ[RAW] = {
            "REMOTE_ADDR": environ.get("REMOTE_ADDR"),
            **{name: environ.get(name) for name in HEADERS},
        }
        value = environ.get("HTTP_FORWARDED")
        chain = forwarded_for(value) if self.trusted and value is not None else []
        if chain:  # (a Forwarded of proto= or host= only names no client)
            listed = environ.get("HTTP_X_FORWARDED_FOR")
            if listed is None:
                environ["HTTP_X_FORWARDED_FOR"] = ", ".join(chain)
            elif _at(_entries(listed), self.trusted) != _at(chain, self.trusted):
                del environ["HTTP_X_FORWARDED_FOR"]  # ambiguous: the peer it is
        return self.app(environ, start_response)
