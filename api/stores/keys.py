"""API keys, the store: ``Authorization: Bearer <key>``, stored only as SHA-256 digests, each with a
tier.

A key is ``kalah_<id>_<secret>``: the id (8 hex digits, not secret) names the key in logs and
in ``kalah keys revoke``; the secret is 32 random bytes, so a plain SHA-256 of the whole key is
safe to store (there is no dictionary to try against it). In Redis:

- ``kalah:key:<sha256 hex>`` -> hash ``{id, tier, created}``
- ``kalah:keyid:<id>`` -> the digest (so a key can be revoked by its id)

Two backends: :class:`~.redis_keys.RedisKeyStore` and, without Redis,
:class:`~.memory_keys.MemoryKeyStore`: the store lives in the process (the embedded default and
tests): keys made by ``kalah keys create`` need ``KALAH_REDIS_URL``. A verified key is remembered
for
:data:`VERIFIED_TTL_S` in each worker (one Redis read per key and worker every few seconds;
a revocation takes effect within that time). If the store fails (Redis down or answering
errors, a record that cannot be read) the key cannot be checked: on public routes the caller
is served at the anonymous tier by IP rather than refused or failed; a route that needs a key
(:func:`require_key`) is a 503 problem with ``Retry-After``, never a 401 telling a key holder
to send the key it sent (docs/deploy.md, "Store faults").
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from ..base.config import TIERS

PREFIX = "kalah:key:"
ID_PREFIX = "kalah:keyid:"


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: str
    tier: str
    created: int


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

    errors: tuple[type[BaseException], ...] = ()
    """What the backend raises when it fails; :meth:`lookup` turns them into
    :class:`KeyStoreUnavailable` (a key that can be neither accepted nor refused)."""

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
