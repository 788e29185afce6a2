"""Answer shaping: an analysis as the bytes the service caches and sends (the JSON of
:func:`kalah_core.answer.analysis_json`, shared with every ``--json`` command), the best-move
digest of it, and the entity tag.

The body is built once per computation, serialized, and cached as bytes; a cache hit only
prepends ``"cached": true``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from kalah_core.answer import analysis_json
from kalah_core.results import Analysis

from .request import AnalysisRequest

CACHED_FLAGS = (b'{"cached":true,', b'{"cached":false,')


def etag_of(body: bytes) -> str:
    """A strong entity tag of the answer's content: the digest of its bytes without the
    leading ``cached`` flag, so the first answer and every cached copy of it share one tag
    (and a revalidation of the first is a 304)."""
    for flag in CACHED_FLAGS:
        if body.startswith(flag):
            body = b"{" + body[len(flag) :]
            break
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


@dataclass(frozen=True, slots=True)
class Answer:
    body: bytes
    """The complete JSON answer, ``cached`` flag included."""
    exact: bool
    cached: bool
    search_ms: float = 0.0
    """How long this request searched (0 when the answer came from the cache)."""

    @property
    def etag(self) -> str:
        return etag_of(self.body)

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


def answer_body(request: AnalysisRequest, analysis: Analysis) -> bytes:
    """The JSON answer without the ``cached`` flag (:func:`kalah_core.answer.analysis_json`,
    the schema ``Analysis``)."""
    body = analysis_json(request.position, request.rules, analysis, request.limits.to_json())
    return json.dumps(body, separators=(",", ":")).encode()


def best_move_of(full: dict[str, Any]) -> dict[str, Any]:
    """The ``/v1/best-move`` answer from a full analysis answer."""
    return {
        "cached": full["cached"],
        "position": full["position"],
        "perspective": full["perspective"],
        "best_move": full["best_moves"][0] if full["best_moves"] else None,
        "best_moves": full["best_moves"],
        "value": full["value"],
        "exact": full["exact"],
        "lower": full["lower"],
        "upper": full["upper"],
    }
