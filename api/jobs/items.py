"""A batch request, normalized: each item an :class:`AnalysisRequest` (the item's own fields
over the shared ones, parsed as ``POST /v1/analysis`` parses them), de-duplicated on its key.

A problem with the batch as a whole (shared rules or limits, too many positions, too much
budget) raises :class:`ApiProblem`; a problem with one item (its position, rules or limits)
becomes a problem object in that item's slot, named ``positions.<i>.<field>``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kalah_core.errors import KalahError

from ..base.config import Settings
from ..core.problems import ApiProblem, problem_object
from ..core.reply import as_cached, dumps
from ..core.request import AnalysisRequest, Limits, RequestJson, parse_rules


@dataclass(frozen=True, slots=True)
class ItemSlot:
    """One input item: the index of its distinct task, or the problem that stops it.
    ``first`` is false for a repeat of an earlier item (its answer is reported as cached)."""

    task: int | None
    problem: dict[str, object] | None = None
    first: bool = True


def slot_json(problem: dict[str, Any] | None, answer: bytes | None, first: bool) -> bytes:
    """One slot's JSON, written here for every runner and store: its problem, else its task's
    answer (reported as cached for a repeat of an earlier item), else ``null`` (no answer yet)."""
    if problem is not None:
        return dumps(problem)
    if answer is None:
        return b"null"
    return answer if first else as_cached(answer)


@dataclass(frozen=True, slots=True)
class Batch:
    tasks: list[AnalysisRequest]
    """The distinct requests, in order of first appearance."""
    slots: list[ItemSlot]

    def assemble(self, answers: Sequence[bytes | None]) -> list[bytes]:
        """Every slot's JSON in input order from the distinct tasks' ``answers`` (None: not
        answered)."""
        return [
            slot_json(slot.problem, None if slot.task is None else answers[slot.task], slot.first)
            for slot in self.slots
        ]

    @property
    def budget_ms(self) -> int:
        """The search time the batch may take in all (repeats cost nothing)."""
        return sum(task.limits.time_ms for task in self.tasks)

    @property
    def problems(self) -> int:
        """Slots answered by a problem object, done before any search."""
        return sum(1 for slot in self.slots if slot.task is None)

    def chunks(self, chunk_size: int) -> list[Chunk]:
        """The distinct tasks cut into chunks of ``chunk_size`` for the job runners, sorted by
        rules then position so one chunk keeps one warm table."""
        tasks = self.tasks
        order = sorted(range(len(tasks)), key=lambda k: (tasks[k].rules.key, tasks[k].key))
        per_task = Counter(slot.task for slot in self.slots if slot.task is not None)
        return [
            Chunk(
                [{"t": k, "n": per_task[k], **tasks[k].to_json()} for k in part],
                sum(per_task[k] for k in part),
            )
            for part in (order[i : i + chunk_size] for i in range(0, len(order), chunk_size))
        ]


class TaskJson(RequestJson):
    """A job's task as its chunk holds it: the request, its index ``t`` among the batch's
    distinct tasks and the number ``n`` of the batch's slots it answers."""

    t: int
    n: int


@dataclass(frozen=True)
class Chunk:
    """A job's unit of work: its tasks as JSON (each with its index ``t`` and the number
    ``n`` of the batch's slots it answers: a job's progress counts each task's slots as its
    answer is stored) and how many of the batch's slots they answer."""

    tasks: list[TaskJson]
    slots: int


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
    Limits.checked(settings, shared_limits, prefix="limits.")
    tasks: list[AnalysisRequest] = []
    index: dict[str, int] = {}
    slots: list[ItemSlot] = []
    for i, item in enumerate(items):
        try:
            task = AnalysisRequest.from_body(
                settings,
                item,
                shared_rules=shared_rules,
                shared_limits=shared_limits,
                where=f"positions.{i}.",
            )
        except (ApiProblem, KalahError) as error:
            slots.append(ItemSlot(None, problem_object(error)))
            continue
        known = index.get(task.key)
        if known is None:
            index[task.key] = known = len(tasks)
            tasks.append(task)
            slots.append(ItemSlot(known))
        else:
            slots.append(ItemSlot(known, first=False))
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
