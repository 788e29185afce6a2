"""API keys in the state Redis: ``kalah:key:<sha256 hex>`` -> hash ``{id, tier, created}``,
``kalah:keyid:<id>`` -> the digest (so a key can be revoked by its id)."""

from __future__ import annotations

from typing import cast

import redis

from .keys import ID_PREFIX, PREFIX, KeyInfo, KeyStore, KeyStoreUnavailable, digest


class RedisKeyStore(KeyStore):
    errors = (redis.RedisError, OSError)

    def __init__(self, url: str, *, timeout_s: float) -> None:
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
        except self.errors as error:
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
