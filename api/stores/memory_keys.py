"""API keys without Redis: in the process (the embedded default and tests)."""

from __future__ import annotations

import threading

from .keys import KeyInfo, KeyStore, digest


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
