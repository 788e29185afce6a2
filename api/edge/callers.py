"""Who is calling: ``Authorization: Bearer <key>`` checked against the key store
(:mod:`kalah_service.stores.keys`), else the caller's address, and its tier.

A verified key is remembered for :data:`VERIFIED_TTL_S` in each worker (one Redis read per key
and worker every few seconds; a revocation takes effect within that time). If the store fails
(Redis down or answering errors, a record that cannot be read) the key cannot be checked: on
public routes the caller is served at the anonymous tier by IP rather than refused or failed;
a route that needs a key (:func:`require_key`) is a 503 problem with ``Retry-After``, never a
401 telling a key holder to send the key it sent (docs/deploy.md, "Store faults").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from flask import current_app, g, request

from ..base.config import TIERS
from ..core.problems import ApiProblem
from ..stores.keys import KeyInfo, KeyStore, KeyStoreUnavailable, digest

log = logging.getLogger("kalah_service.edge.callers")

VERIFIED_TTL_S = 10.0
BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="kalah"'}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request is charged to: ``key:<id>`` or ``ip:<address>``, and its tier."""

    identity: str
    tier: str
    key_id: str | None = None


class Authenticator:
    """Resolves each request's :class:`Caller` once (cached in ``g``) with a short-lived
    in-process memory of verified keys."""

    BACKOFF_S = 0.5
    """After the store failed, keys are not looked up for this long (each try could cost a
    whole Redis timeout on a partitioned network)."""

    def __init__(self, store: KeyStore, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.clock = clock
        """Monotonic seconds: the memory of verified keys and the back-off run on it."""
        self._verified: dict[str, tuple[KeyInfo, float]] = {}
        self._lock = threading.Lock()
        self._down_until = 0.0

    def _verify(self, key: str) -> KeyInfo | None:
        key_digest = digest(key)
        now = self.clock()
        with self._lock:
            known = self._verified.get(key_digest)
        if known is not None and known[1] > now:
            return known[0]
        if now < self._down_until:
            raise KeyStoreUnavailable("skipped: the key store failed less than 0.5 s ago")
        try:
            info = self.store.lookup(key_digest)
        except KeyStoreUnavailable:
            self._down_until = now + self.BACKOFF_S
            raise
        with self._lock:
            if info is None:
                self._verified.pop(key_digest, None)
            else:
                if len(self._verified) > 10000:  # bounded: drop everything, re-verify lazily
                    self._verified.clear()
                self._verified[key_digest] = (info, now + VERIFIED_TTL_S)
        return info

    def caller(self) -> Caller:
        """The caller of the current request; raises a 401 problem for a bad key."""
        cached: Caller | None = g.get("kalah_caller")
        if cached is not None:
            return cached
        caller = self._resolve()
        g.kalah_caller = caller
        return caller

    @staticmethod
    def anonymous() -> Caller:
        """The current request's caller as if it sent no key: its IP, the lowest tier."""
        return Caller(f"ip:{request.remote_addr or 'unknown'}", TIERS[0])

    def _resolve(self) -> Caller:
        anonymous = self.anonymous()
        header = request.headers.get("Authorization")
        if header is None:
            return anonymous
        scheme, _, key = header.partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key or len(key) > 256:
            raise _unauthorized("the Authorization header must be 'Bearer <API key>'")
        try:
            info = self._verify(key)
        except KeyStoreUnavailable as error:
            log.warning("key store unreachable (%s): serving the caller as anonymous", error)
            g.kalah_key_unchecked = True  # a route that needs the key says 503, not 401
            return anonymous
        if info is None:
            raise _unauthorized("unknown or revoked API key")
        return Caller(f"key:{info.id}", info.tier, info.id)


def _unauthorized(detail: str) -> ApiProblem:
    return ApiProblem("unauthorized", detail, field="Authorization", headers=BEARER_CHALLENGE)


def authenticator() -> Authenticator:
    return cast(Authenticator, current_app.extensions["kalah_auth"])


def current_caller() -> Caller:
    """The caller of the current request (anonymous by IP unless a valid key was sent)."""
    return authenticator().caller()


def require_key() -> Caller:
    """For endpoints only key holders may use (batch jobs): a 401 problem without a key."""
    caller = current_caller()
    if caller.key_id is None and g.get("kalah_key_unchecked"):
        raise ApiProblem(
            "not-ready",
            "the API key cannot be checked now (the key store is failing); try again later",
            headers={"Retry-After": str(max(1, round(Authenticator.BACKOFF_S)))},
        )
    if caller.key_id is None:
        raise ApiProblem(
            "key-required",
            "this endpoint needs an API key: send 'Authorization: Bearer <key>'",
            field="Authorization",
            headers=BEARER_CHALLENGE,
        )
    return caller
