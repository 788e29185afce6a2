"""``kalah keys create|revoke``: API keys in the state store, made and revoked by hand."""

from __future__ import annotations

import json
import sys

from ..base.config import load_settings
from ..stores.keys import KeyInfo, KeyStoreUnavailable
from .backends import make_key_store


def describe(info: KeyInfo) -> dict[str, object]:
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
    store = make_key_store(settings, timeout_s=max(settings.redis_timeout_s, 2.0))
    failures: tuple[type[BaseException], ...] = (KeyStoreUnavailable, *store.errors)
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
    except failures as error:
        print(f"kalah keys: Redis unreachable: {error}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"revoked": revoked}))
    else:
        print("revoked" if revoked else "no such key", file=sys.stderr if not revoked else None)
    return 0 if revoked else 1
