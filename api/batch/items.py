"""A batch request, normalized: each item's rules, position and limits (the item's own fields
over the shared ones), parsed as ``POST /v1/analysis`` parses them, and de-duplicated.

A problem with the batch as a whole (shared rules or limits, too many positions, too much
budget) raises :class:`ApiProblem`; a problem with one item (its position, rules or limits)
becomes a problem object in that item's slot, named ``positions.<i>.<field>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kalah_core.errors import KalahError
from kalah_core.position import Position
from kalah_core.rules import Rules

from ..analysis.service import Limits, effective_limits, parse_position_field, parse_rules
from ..config import Settings
from ..errors import ApiProblem, problem_object


@dataclass(frozen=True, slots=True)
class Task:
    """One distinct analysis of a batch: what :meth:`Analyser.analyse` is called with."""

    rules: Rules
    position: Position
    limits: Limits

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rules.key, self.position.compact(), self.limits.key)

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules.to_json(),
            "position": self.position.compact(),
            "limits": self.limits.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Task:
        rules = Rules.from_json(data["rules"])
        limits = data["limits"]
        return cls(
            rules,
            Position.parse(data["position"]),
            Limits(limits["time_ms"], limits.get("depth"), limits.get("nodes")),
        )


@dataclass(frozen=True, slots=True)
class Slot:
    """One input item: the index of its distinct task, or the problem that stops it.
    ``first`` is false for a repeat of an earlier item (its answer is reported as cached)."""

    task: int | None
    problem: dict[str, Any] | None = None
    first: bool = True


@dataclass(frozen=True, slots=True)
class Batch:
    tasks: list[Task]
    slots: list[Slot]

    def assemble(self, answers: Sequence[bytes]) -> list[bytes]:
        """Every slot's JSON in input order from the distinct tasks' ``answers``."""
        return [
            json.dumps(slot.problem).encode()
            if slot.task is None
            else answers[slot.task]
            if slot.first
            else as_cached(answers[slot.task])
            for slot in self.slots
        ]

    @property
    def budget_ms(self) -> int:
        """The search time the batch may take in all (repeats cost nothing)."""
        return sum(task.limits.time_ms for task in self.tasks)


def parse_batch(
    settings: Settings,
    items: Sequence[Mapping[str, Any]],
    rules: object = "kalah",
    limits: Mapping[str, Any] | None = None,
) -> Batch:
    if len(items) > settings.batch_max_positions:
        raise ApiProblem(
            "limit-exceeded",
            f"{len(items)} positions is above the server's maximum of "
            f"{settings.batch_max_positions} per batch",
            field="positions",
            max=settings.batch_max_positions,
        )
    shared_rules = parse_rules(rules)
    shared_limits = dict(limits or {})
    effective_limits(
        settings,
        shared_limits.get("time_ms"),
        shared_limits.get("depth"),
        shared_limits.get("nodes"),
        prefix="limits.",
    )
    tasks: list[Task] = []
    index: dict[tuple[str, str, str], int] = {}
    slots: list[Slot] = []
    for i, item in enumerate(items):
        where = f"positions.{i}."
        try:
            item_rules = (
                parse_rules(item["rules"], field=where + "rules")
                if "rules" in item
                else shared_rules
            )
            position = parse_position_field(item["position"], item_rules, field=where + "position")
            merged = {**shared_limits, **(item.get("limits") or {})}
            task_limits = effective_limits(
                settings,
                merged.get("time_ms"),
                merged.get("depth"),
                merged.get("nodes"),
                prefix=where + "limits.",
            )
        except (ApiProblem, KalahError) as error:
            slots.append(Slot(None, problem_object(error)))
            continue
        task = Task(item_rules, position, task_limits)
        known = index.get(task.key)
        if known is None:
            index[task.key] = known = len(tasks)
            tasks.append(task)
            slots.append(Slot(known))
        else:
            slots.append(Slot(known, first=False))
    batch = Batch(tasks, slots)
    if batch.budget_ms > settings.batch_max_budget_ms:
        raise ApiProblem(
            "limit-exceeded",
            f"the batch asks for {batch.budget_ms} ms of search in all, above the server's "
            f"maximum of {settings.batch_max_budget_ms} (lower limits.time_ms)",
            field="limits.time_ms",
            max=settings.batch_max_budget_ms,
        )
    return batch


def inline_ok(settings: Settings, batch: Batch) -> bool:
    """Whether the batch is small enough to answer in the request itself."""
    return len(batch.slots) <= settings.batch_inline_max and batch.budget_ms <= settings.max_time_ms


def as_cached(body: bytes) -> bytes:
    """An answer body reported as served from the cache (a repeat within the batch)."""
    fresh = b'{"cached":false,'
    return b'{"cached":true,' + body[len(fresh) :] if body.startswith(fresh) else body
