"""API keys: ``Authorization: Bearer <key>``, stored only as SHA-256 digests, each with a tier.

A key is ``kalah_<id>_<secret>``: the id (8 hex digits, not secret) names the key in logs and
in ``kalah keys revoke``; the secret is 32 random bytes, so a plain SHA-256 of the whole key is
safe to store (there is no dictionary to try against it). In Redis:

- ``kalah:key:<sha256 hex>`` -> hash ``{id, tier, created}``
- ``kalah:keyid:<id>`` -> the digest (so a key can be revoked by its id)

Without Redis the store lives in the process (the embedded default and tests): keys made by
``kalah keys create`` need ``KALAH_REDIS_URL``. A verified key is remembered for
:data:`VERIFIED_TTL_S` in each worker (one Redis read per key and worker every few seconds;
a revocation takes effect within that time). If the store fails (Redis down or answering
errors, a record that cannot be read) the key cannot be checked: on public routes the caller
is served at the anonymous tier by IP rather than refused or failed; a route that needs a key
(:func:`require_key`) is a 503 problem with ``Retry-After``, never a 401 telling a key holder
to send the key it sent (docs/deploy.md, "Store faults").
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import redis
from flask import current_app, g, request

from ..base.config import TIERS, load_settings
from ..core.problems import ApiProblem

log = logging.getLogger("kalah_service.edge.keys")

PREFIX = "kalah:key:"
ID_PREFIX = "kalah:keyid:"
VERIFIED_TTL_S = 10.0
BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="kalah"'}


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: str
    tier: str
    created: int


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request is charged to: ``key:<id>`` or ``ip:<address>``, and its tier."""

    identity: str
    tier: str
    key_id: str | None = None


class KeyStoreUnavailable(Exception):
    """The store cannot be read (Redis down): the key can be neither accepted nor refused."""


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A fresh ``(key, id)``."""
    key_id = secrets.token_hex(4)
    return f"kalah_{key_id}_{secrets.token_urlsafe(32)}", key_id


def _check_tier(tier: str) -> None:
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}: expected one of {', '.join(TIERS)}")


class KeyStore:
    """Keys by digest; see the module docstring."""

    def create(self, tier: str) -> tuple[str, KeyInfo]:
        """A new key of ``tier``: the key itself (shown once, never stored) and its record."""
        _check_tier(tier)
        key, key_id = new_key()
        info = KeyInfo(key_id, tier, int(time.time()))
        self._put(digest(key), info)
        return key, info

    def revoke(self, key_or_id: str) -> bool:
        """Remove a key given by the key itself or its id; False if there was none."""
        raise NotImplementedError

    def lookup(self, key_digest: str) -> KeyInfo | None:
        raise NotImplementedError

    def _put(self, key_digest: str, info: KeyInfo) -> None:
        raise NotImplementedError


class MemoryKeyStore(KeyStore):
    def __init__(self) -> None:
        self._keys: dict[str, KeyInfo] = {}
        self._lock = threading.Lock()

    def _put(self, key_digest: str, info: KeyInfo) -> None:
        with self._lock:
            self._keys[key_digest] = info

    def lookup(self, key_digest: str) -> KeyInfo | None:
        return self._keys.get(key_digest)

    def revoke(self, key_or_id: str) -> bool:
        with self._lock:
            for key_digest, info in list(self._keys.items()):
                if key_digest == digest(key_or_id) or info.id == key_or_id:
                    del self._keys[key_digest]
                    return True
        return False


class RedisKeyStore(KeyStore):
    def __init__(self, url: str, *, timeout_s: float) -> None:
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )

    def _put(self, key_digest: str, info: KeyInfo) -> None:
        pipe = self.client.pipeline()
        pipe.hset(
            PREFIX + key_digest,
            mapping={"id": info.id, "tier": info.tier, "created": info.created},
        )
        pipe.set(ID_PREFIX + info.id, key_digest)
        pipe.execute()

    def lookup(self, key_digest: str) -> KeyInfo | None:
        try:
            raw = cast(dict[bytes, bytes], self.client.hgetall(PREFIX + key_digest))
        except self._errors as error:
            raise KeyStoreUnavailable(str(error)) from error
        if not raw:
            return None
        try:
            return KeyInfo(raw[b"id"].decode(), raw[b"tier"].decode(), int(raw[b"created"]))
        except (KeyError, ValueError) as error:  # a damaged record: neither valid nor revoked
            raise KeyStoreUnavailable(f"the key's record cannot be read: {error!r}") from error

    def revoke(self, key_or_id: str) -> bool:
        stored = cast(bytes | None, self.client.get(ID_PREFIX + key_or_id))
        key_digest = stored.decode() if stored is not None else digest(key_or_id)
        info = self.lookup(key_digest)
        if info is None:
            return False
        removed = self.client.delete(PREFIX + key_digest, ID_PREFIX + info.id)
        return bool(removed)


def make_key_store(redis_url: str | None, *, timeout_s: float) -> KeyStore:
    return RedisKeyStore(redis_url, timeout_s=timeout_s) if redis_url else MemoryKeyStore()


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


def describe(info: KeyInfo) -> dict[str, Any]:
    return {"id": info.id, "tier": info.tier, "created": info.created}


def cli(action: str, *, tier: str = "standard", key: str = "", as_json: bool = False) -> int:
    """``kalah keys create|revoke`` against the state store (``KALAH_STATE_REDIS_URL``, else
    ``KALAH_REDIS_URL``)."""
    settings = load_settings()
    if not settings.state_url:
        print(
            "kalah keys: neither KALAH_STATE_REDIS_URL nor KALAH_REDIS_URL is set (keys live "
            "in the state store's Redis)",
            file=sys.stderr,
        )
        return 2
    store = RedisKeyStore(settings.state_url, timeout_s=max(settings.redis_timeout_s, 2.0))
    try:
        if action == "create":
            try:
                new, info = store.create(tier)
            except ValueError as error:
                print(f"kalah keys: {error}", file=sys.stderr)
                return 2
            if as_json:
                print(json.dumps({"key": new, **describe(info)}))
            else:
                print(new)
                print(f"id {info.id}, tier {info.tier}: shown once, store it now", file=sys.stderr)
            return 0
        revoked = store.revoke(key)
    except (OSError, KeyStoreUnavailable, redis.RedisError) as error:
        print(f"kalah keys: Redis unreachable: {error}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"revoked": revoked}))
    else:
        print("revoked" if revoked else "no such key", file=sys.stderr if not revoked else None)
    return 0 if revoked else 1
