"""The cost policy: what a request costs, in units of the caller's bucket.

- Every request under ``/v1/`` costs its endpoint's base cost: :data:`ROUTE_COSTS`, 1 for an
  endpoint not listed.
- A body above :data:`FREE_BODY_BYTES` costs 1 unit per started :data:`BODY_UNIT_BYTES`
  more, paid when it is admitted, before it is read (:func:`body_cost`): parsing and
  validating a large batch is work, and a request refused after it (a batch the bucket cannot
  pay) keeps paying it. A unit of search is 100 ms; a unit per 16 KB charges reading at
  least what its CPU costs (the measurement behind it: HISTORY.md).
- A search costs 1 unit per started :data:`SEARCH_UNIT_MS` it ran (:func:`search_cost`): a
  cached answer runs none, an uncached one at the default 1 s budget costs up to 10 more.
- A batch run as a job costs 1 unit per started :data:`ITEMS_PER_UNIT` items when it is
  posted (:func:`job_cost`), and then the search its chunks actually ran, charged as each
  search ends, whatever becomes of its chunk (:func:`kalah_service.edge.charging.charge_later`):
  not its whole budget up front, which made a 10,000-item job at 1 s (about 110,000 units)
  impossible with a standard key. The bucket must hold the first chunk's budget when the job
  is posted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..base.config import MAX_BODY_BYTES

ROUTE_COSTS: Mapping[str, int] = {}
"""Base cost of an endpoint (Flask endpoint name, e.g. ``"batch.Batch"``), 1 when absent."""

SEARCH_UNIT_MS = 100
"""A request is charged one more unit per started this many milliseconds of search."""

FREE_BODY_BYTES = MAX_BODY_BYTES
"""A body up to this size (every endpoint's limit but the batch's) is in the base cost."""

ITEMS_PER_UNIT = 100
"""A batch job costs one unit per started this many items when it is posted."""

BODY_UNIT_BYTES = 16 * 1024
"""Above :data:`FREE_BODY_BYTES`, a body costs one unit per started this many bytes."""


def base_cost(endpoint: str | None) -> int:
    return ROUTE_COSTS.get(endpoint or "", 1)


def search_cost(time_ms: float) -> int:
    """Units for a search of ``time_ms`` milliseconds."""
    return math.ceil(time_ms / SEARCH_UNIT_MS) if time_ms > 0 else 0


def body_cost(length: int | None) -> int:
    """Units for reading, parsing and validating a body of ``length`` bytes."""
    extra = (length or 0) - FREE_BODY_BYTES
    return math.ceil(extra / BODY_UNIT_BYTES) if extra > 0 else 0


def job_cost(items: int) -> int:
    """Units for posting a batch job of ``items`` (bad ones too): storing them; its searches
    are charged as they run."""
    return math.ceil(items / ITEMS_PER_UNIT)


COSTS_DOC = f"""\
**Rate limits.** Every `/v1/` request is charged in cost units against its caller's bucket:
the API key of `Authorization: Bearer <key>`, or the client IP without one (the `anonymous`
tier). A request costs 1 unit, plus 1 per started {SEARCH_UNIT_MS} ms of search it ran (a
cached answer runs none; an uncached one at the default 1 s budget costs up to 11), reserved
before the search runs (429 if the bucket cannot hold the budget's cost; the unspent part is
refunded); a body above {FREE_BODY_BYTES // 1024} KiB costs 1 unit per started
{BODY_UNIT_BYTES // 1024} KiB more, reserved before the body is read (429 at once if the
bucket cannot hold it) and kept even when the request is then refused; a batch run as a job
needs an API key (with Redis), costs 1 unit per started {ITEMS_PER_UNIT} items when posted
(the bucket must also hold its first chunk's search budget), and then the search its chunks
actually ran, charged as each search ends; a caller may have 4 jobs queued or running at
once. Answers carry
`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
(Unix time of the window's end) and `Kalah-Cost` (what this request cost); a spent bucket is a
429 problem with `Retry-After`. An unknown or revoked key is a 401 problem, charged 1 unit to
the client's IP. Each tier's size is
this server's `KALAH_LIMIT_<TIER>` setting (docs/config.md). `KALAH_LIMITS` says who is
limited: `auto` (the default) everyone but a caller on a loopback address of a server without
Redis (a person's own machine), `on` everyone, `off` no one; `GET /v1/rules` says which
applies (`rate_limits.mode`, `rate_limits.applies`).
"""
