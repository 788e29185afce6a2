"""Run the API under gunicorn with :mod:`kalah_service.ops.gunicorn_conf` (the ``kalah serve``
command).

Bare gunicorn is for this machine only: ``kalah serve`` refuses an address other machines can
reach (anything but loopback) unless ``--behind-proxy`` says a buffering reverse proxy (the
shipped ``deploy/k8s/nginx.conf``, a cloud load balancer) stands in front. Why refuse rather
than change the worker: a ``gthread`` worker gives a thread to a connection as soon as its
first byte arrives and the thread then reads the request itself, so 40 sockets sending a
header byte every 4 s held every thread and ``/livez`` timed out (issue 33, finding 5); the
per-read timeout of :mod:`kalah_service.ops.gworker` cannot tell a trickle from a slow network. An
async worker class (gevent, eventlet) would hold such clients cheaply, but the engines run their
searches in real threads without the GIL, which greenlets would serialize (a search would
stall the whole worker: cached answers and health checks included), eventlet is deprecated,
and gevent would be a compiled dependency for one command. nginx in front is what the
deployment already ships (compose and Kubernetes), so the safe choice is to insist on it.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from types import FrameType

from ..base.config import Settings, load_settings

CONFIG = "python:kalah_service.ops.gunicorn_conf"
"""gunicorn's ``-c``: the configuration module of the installed package."""


def gunicorn_command(host: str, port: int, workers: int | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        CONFIG,
        "-b",
        f"{_bind_host(host)}:{port}",
    ]
    if workers is not None:
        command += ["-w", str(workers)]
    return [*command, "kalah_service.wsgi:app"]


def _stop_with_parent() -> None:
    """In the gunicorn child, before exec: the kernel sends it SIGTERM (a clean stop of every
    worker and of their background builds) when ``kalah serve`` ends, even by SIGKILL (Linux
    ``PR_SET_PDEATHSIG``; elsewhere nothing). ``kalah serve`` has no other thread yet, so a
    ``preexec_fn`` is safe here."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def _bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


EXIT_REFUSED = 2
"""``kalah serve``'s exit status when it refuses to expose bare gunicorn."""


def exposed(host: str) -> bool:
    """Whether serving on ``host`` reaches beyond this machine: True for every address but a
    loopback one (``""``, ``0.0.0.0`` and ``::`` are every interface; a name counts as
    loopback only if every address it resolves to is, and one that does not resolve is
    exposed)."""
    text = host.strip("[]")
    if not text:
        return True
    try:
        return not ipaddress.ip_address(text).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(text, None)
    except OSError:
        return True
    return not found or any(not ipaddress.ip_address(info[4][0]).is_loopback for info in found)


def refusal(host: str) -> str:
    """Why ``kalah serve`` does not start on ``host``, and what to do instead."""
    return (
        f"kalah serve: refusing to serve bare gunicorn on {host or 'every interface'}, an "
        "address other machines can reach: gunicorn gives a thread to each connection as "
        "soon as its first byte arrives, so a few dozen clients sending their requests a byte "
        "at a time hold every thread (even /livez stops answering). Put a buffering reverse "
        "proxy in front (deploy/k8s/nginx.conf, as deploy/compose.yaml and deploy/k8s do) and "
        "pass --behind-proxy, or serve on 127.0.0.1 (the default)."
    )


def proxy_environment(environ: Mapping[str, str], behind_proxy: bool) -> dict[str, str]:
    """The server's environment: with ``behind_proxy``, ``KALAH_LIMITS`` ``auto`` (or unset)
    becomes ``on`` (behind a proxy every caller arrives from the proxy's address, so auto's
    loopback exemption would exempt them all) and ``KALAH_TRUSTED_PROXIES`` unset becomes 1
    (the proxy's hop names the client; otherwise every client shares the proxy's bucket).
    An explicit ``KALAH_LIMITS=off`` or ``on`` and any ``KALAH_TRUSTED_PROXIES`` are kept."""
    env = dict(environ)
    if behind_proxy:
        if env.get("KALAH_LIMITS", "").strip() in ("", "auto"):
            env["KALAH_LIMITS"] = "on"
        if env.get("KALAH_TRUSTED_PROXIES", "").strip() == "":
            env["KALAH_TRUSTED_PROXIES"] = "1"
    return env


def exemption(settings: Settings) -> str:
    """One line: who is exempt from the rate limits, and how a client is told apart."""
    hops = settings.trusted_proxies
    client = (
        f"a client is the address {hops} proxy hop{'s' if hops > 1 else ''} back in "
        "X-Forwarded-For or Forwarded (KALAH_TRUSTED_PROXIES)"
        if hops
        else "a client is its connection's address (KALAH_TRUSTED_PROXIES=0)"
    )
    if settings.limits == "off":
        return "rate limits: off (KALAH_LIMITS=off): every caller is exempt"
    if settings.limits == "on":
        return f"rate limits: on: no caller is exempt; {client}"
    if settings.state_url:
        return f"rate limits: auto, with a state store: no caller is exempt; {client}"
    return (
        "rate limits: auto: exempt is any caller connecting from a loopback address without an "
        "X-Forwarded-For or Forwarded header, which includes anything relaying to this port "
        "without one (socat, ssh -L); expose it only with --behind-proxy or KALAH_LIMITS=on"
    )


def serve(host: str, port: int, workers: int | None, *, behind_proxy: bool = False) -> int:
    """Run gunicorn in the foreground until it stops; returns its exit status. ``workers``
    None means ``KALAH_WORKERS`` (default: the CPU count). An address other machines can
    reach is refused (:data:`EXIT_REFUSED`, nothing is bound) unless ``behind_proxy``, which
    also turns the limits on and trusts one proxy hop unless told otherwise
    (:func:`proxy_environment`). Prints, in one line, who is exempt from the limits."""
    if exposed(host) and not behind_proxy:
        print(refusal(host), file=sys.stderr, flush=True)
        return EXIT_REFUSED
    env = proxy_environment(os.environ, behind_proxy)
    try:
        settings = load_settings(environ=env)
    except ValueError as error:  # every worker would fail on it: say so once, bind nothing
        print(f"kalah serve: {error}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    print(
        f"Kalah API on http://{_bind_host(host)}:{port}/ (docs: /docs, spec: /openapi.json)",
        flush=True,
    )
    print(exemption(settings), flush=True)
    process = subprocess.Popen(
        gunicorn_command(host, port, workers), env=env, preexec_fn=_stop_with_parent
    )

    def forward(signum: int, frame: FrameType | None) -> None:
        process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:  # gunicorn got the SIGINT too; wait for its clean stop
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kalah_service.ops.serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--behind-proxy", action="store_true")
    arguments = parser.parse_args()
    sys.exit(
        serve(
            arguments.host, arguments.port, arguments.workers, behind_proxy=arguments.behind_proxy
        )
    )
