"""The answer to one analysis: its content, whether it came from the cache, and its one
serialisation.

An :class:`Answer` holds the analysis as the JSON the answer store keeps (the schema
``Analysis`` without ``cached``: :func:`kalah_core.answer.analysis_json`, shared with every
``--json`` command) and carries ``cached`` as a field of its own. Its body is written in one
place (:meth:`Answer.body`, the flag first), and its entity tag digests the content without
the flag, so the first answer and every cached copy of it share one tag (a revalidation of
the first is a 304). The ``/v1/best-move`` digest (:meth:`Answer.best_move`) is an answer of
the same kind. No code edits an answer's bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from kalah_core.answer import analysis_json
from kalah_core.results import Analysis

from .request import AnalysisRequest


def dumps(data: object) -> bytes:
    """The service's compact JSON text of ``data`` (answers and what the store keeps)."""
    return json.dumps(data, separators=(",", ":")).encode()


def etag_of(content: bytes) -> str:
    """A strong entity tag of ``content`` (an answer without its ``cached`` flag, an image)."""
    return '"' + hashlib.blake2b(content, digest_size=16).hexdigest() + '"'


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer: ``content`` is its JSON without ``cached`` (what the store keeps)."""

    content: bytes
    exact: bool
    cached: bool = False
    search_ms: float = 0.0
    """How long this request searched (0 when the answer came from the cache)."""

    @classmethod
    def of(cls, request: AnalysisRequest, analysis: Analysis, search_ms: float) -> Answer:
        """A fresh answer to ``request`` from the engine's ``analysis``."""
        data = analysis_json(request.position, request.rules, analysis, request.limits.to_json())
        return cls(dumps(data), analysis.exact, False, search_ms)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        """An answer from its object (as :meth:`json` gives it, e.g. a batch job's result)."""
        content = {name: value for name, value in data.items() if name != "cached"}
        return cls(dumps(content), bool(data.get("exact")), bool(data.get("cached")))

    def data(self) -> dict[str, Any]:
        """The content as an object (without ``cached``)."""
        data: dict[str, Any] = json.loads(self.content)
        return data

    def json(self) -> dict[str, Any]:
        """The answer as an object: ``cached`` first, then the content."""
        return {"cached": self.cached, **self.data()}

    def body(self) -> bytes:
        """The answer's bytes: the one place an answer is serialised."""
        return dumps(self.json())

    @property
    def etag(self) -> str:
        """The strong entity tag of the content: the same with or without the cache."""
        return etag_of(self.content)

    def as_cached(self) -> Answer:
        """The same answer reported as served from the cache (a repeat within a batch)."""
        return dataclasses.replace(self, cached=True, search_ms=0.0)

    def best_move(self) -> Answer:
        """The ``/v1/best-move`` digest of this answer (the schema ``BestMoveAnswer``)."""
        full = self.data()
        digest = {
            "position": full["position"],
            "perspective": full["perspective"],
            "best_move": full["best_moves"][0] if full["best_moves"] else None,
            "best_moves": full["best_moves"],
            "value": full["value"],
            "exact": full["exact"],
            "lower": full["lower"],
            "upper": full["upper"],
        }
        return Answer(dumps(digest), self.exact, self.cached, self.search_ms)


def as_cached(body: bytes) -> bytes:
    """A batch result's body reported as served from the cache (a repeat of an earlier item);
    a problem object (no ``cached`` field) is left as it is."""
    data = json.loads(body)
    if not isinstance(data, dict) or "cached" not in data:
        return body
    return Answer.from_json(data).as_cached().body()
