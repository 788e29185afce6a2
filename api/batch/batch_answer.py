"""A batch's answer, serialised once: an inline batch's results, or a page of a job's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Response

from ..core.reply import dumps


@dataclass(frozen=True, slots=True)
class BatchAnswer:
    """``results`` are the slots' JSON in input order as the runner or the job store gives
    them (an analysis, a problem object, or ``null``); ``head`` the fields before them (a job's
    status and paging; none for an inline batch)."""

    results: Sequence[bytes]
    head: Mapping[str, Any] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {**self.head, "results": [json.loads(result) for result in self.results]}

    def body(self) -> bytes:
        """The answer's bytes: the one place a batch answer is serialised."""
        return dumps(self.json())

    def response(self) -> Response:
        return Response(self.body(), status=200, mimetype="application/json")
