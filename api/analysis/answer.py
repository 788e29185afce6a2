"""Answer shaping: the JSON of an analysis (``POST /v1/analysis``, ``kalah analyse --json``,
a batch item), the best-move digest of it, and the cached bytes with their entity tag.

The body is built once per computation, serialized, and cached as bytes; a cache hit only
prepends ``"cached": true``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from kalah_core.solver import ENGINE_VERSION, Analysis

from .request import AnalysisRequest


def etag_of(body: bytes) -> str:
    """A strong entity tag: the digest of the exact bytes of the representation."""
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
    """The JSON answer without the ``cached`` flag (see the schema ``AnalysisAnswer``)."""
    position, rules = request.position, request.rules
    body = {
        "position": position.compact(),
        "board": position.to_json(),
        "rules": rules.to_json(),
        "perspective": "side_to_move",
        "to_move": position.to_move.value,
        "value": analysis.value,
        "exact": analysis.exact,
        "lower": analysis.lower,
        "upper": analysis.upper,
        "best_moves": list(analysis.best_moves),
        "moves": [
            {
                "move": m.move,
                "value": m.value,
                "exact": m.exact,
                "lower": m.lower,
                "upper": m.upper,
                "extra_turn": m.extra_turn,
                "captured": m.captured,
                "position": m.position.compact(),
            }
            for m in analysis.moves
        ],
        "pv": [list(turn) for turn in analysis.pv],
        "depth": analysis.depth,
        "nodes": analysis.nodes,
        "time_ms": round(analysis.time_ms, 3),
        "over": analysis.over,
        "limits": request.limits.to_json(),
        "engine": ENGINE_VERSION,
    }
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
