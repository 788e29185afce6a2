"""The answer store: one interface (:class:`~.base.AnswerStore`, with the one single-flight)
and its two backends, chosen by the settings (:func:`make_store`).

- :mod:`.base`: the keys, the entries, the interface and the single-flight;
- :mod:`.embedded`: SQLite on the local disk, shared by every process of the machine (the
  default, no Redis);
- :mod:`.redis_store`: Redis, shared by every worker and replica (``KALAH_REDIS_URL``).
"""

from __future__ import annotations

from kalah_core.databases import cache_dir

from ..base.config import Settings
from .answers import AnswerStore, Entry, Keys
from .embedded_answers import EmbeddedStore
from .redis_answers import RedisStore

__all__ = ["AnswerStore", "EmbeddedStore", "Entry", "Keys", "RedisStore", "make_store"]


def make_store(settings: Settings, *, max_connections: int) -> AnswerStore:
    """The answer store the settings configure: Redis behind an LRU, or the embedded store
    shared by every process of the machine."""
    if settings.redis_url:
        return RedisStore(
            settings.redis_url,
            ttl_s=settings.cache_ttl_s,
            lru_size=settings.lru_size,
            timeout_s=settings.redis_timeout_s,
            max_connections=max_connections,
        )
    return EmbeddedStore(
        settings.cache_dir or cache_dir() / "answers",
        size_mb=settings.cache_mb,
        ttl_s=settings.cache_ttl_s,
        lru_size=settings.lru_size,
    )
