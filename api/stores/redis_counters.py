"""The rate limits' counters in Redis (the state store): :class:`RedisCounters`."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from .counters import KEY_PREFIX, Counters, Limit, Totals, Window

# KEYS: the windows; ARGV: units, then each window's limit and length in seconds.
_RESERVE = """
local units = tonumber(ARGV[1])
local refused = 0
for i, key in ipairs(KEYS) do
  redis.call('SET', key, 0, 'EX', ARGV[2 * i + 1], 'NX')
  if refused == 0 and tonumber(redis.call('GET', key)) + units > tonumber(ARGV[2 * i]) then
    refused = i
  end
end
local out = {refused}
for _, key in ipairs(KEYS) do
  if refused == 0 then
    table.insert(out, redis.call('INCRBY', key, units))
  else
    table.insert(out, tonumber(redis.call('GET', key)))
  end
  table.insert(out, redis.call('PTTL', key))
end
return out
"""


class RedisCounters(Counters):
    """Counters in Redis: one round trip for any number of windows."""

    errors = (redis.RedisError, OSError)

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self._reserve = self.client.register_script(_RESERVE)

    def probe(self) -> None:
        self.client.set(f"{KEY_PREFIX}:probe", 0, ex=60)  # a write: an OOM Redis still pings

    def reserve(self, limits: Sequence[Limit], units: int) -> tuple[int | None, Totals]:
        args: list[int] = [units]
        for _, seconds, limit in limits:
            args += [limit, seconds]
        reply = self._reserve(keys=[key for key, _, _ in limits], args=args)
        refused = int(reply[0]) - 1
        totals = [
            (int(reply[1 + 2 * i]), max(int(reply[2 + 2 * i]), 0) / 1000.0)
            for i in range(len(limits))
        ]
        return (refused if refused >= 0 else None), totals

    def add(self, windows: Sequence[Window]) -> Totals:
        pipe = self.client.pipeline(transaction=False)
        for key, units, seconds in windows:
            pipe.set(key, 0, ex=seconds, nx=True)
            pipe.incrby(key, units)
            pipe.pttl(key)
        replies = pipe.execute()
        return [
            (int(replies[3 * i + 1]), max(int(replies[3 * i + 2]), 0) / 1000.0)
            for i in range(len(windows))
        ]
