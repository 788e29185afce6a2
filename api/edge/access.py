"""Who may read ``/metrics``: the networks of ``KALAH_METRICS_ALLOW`` (default loopback).

The metrics tell request rates, cache sizes and error counts: nothing for the public. A
request is allowed when every address it came through is inside the allowed networks: the
peer that connected to gunicorn, each address of ``X-Forwarded-For`` and each ``for=`` of
``Forwarded`` (:func:`kalah_service.edge.forwarding.hops`). So a public client behind the shipped
nginx (whose peer is loopback) is refused by its forwarded address, and a forged ``X-Forwarded-For``
or ``Forwarded`` naming 127.0.0.1 does not help a remote peer. A relay that forwards no header
(socat, ``ssh -L``) is indistinguishable from a local caller: see docs/deploy.md. In
Kubernetes, Prometheus scrapes gunicorn's port directly from inside the cluster
(``deploy/k8s/api.yaml`` allows the private networks), and the shipped nginx answers
``/metrics`` with a 404 in any case.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from flask import Response

from ..base.config import Network, parse_networks
from .forwarding import hops
from .http_errors import problem_response


def _inside(address: str, networks: Iterable[Network]) -> bool:
    try:
        parsed = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    return any(parsed in network for network in networks)


def metrics_allowed(environ: Mapping[str, Any], allow: str) -> bool:
    networks = parse_networks(allow)
    if networks is None:
        return True
    return all(_inside(address, networks) for address in hops(environ))


def metrics_refusal() -> Response:
    return problem_response(
        403,
        "Forbidden",
        "metrics are served only to the networks of KALAH_METRICS_ALLOW (loopback by default)",
    )
