"""``kalah batch`` without a server: read items (JSONL or CSV), analyse the distinct ones on
every core, write one JSON line per item in input order.

Each process keeps one warm :class:`Analyser` (engine, transposition table, cache) for all its
tasks, and every task goes through :func:`kalah_service.jobs.runner.answer_all` (the loop of inline
batches and job runners), so a line equals the answer of ``POST /v1/analysis`` (with
``KALAH_REDIS_URL`` set, the same shared cache too). The items are checked here, not by the
HTTP schema: a file's line is not a request body.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from kalah_core.errors import InvalidNotationError

from ..base.config import load_settings
from ..core.analyser import Analyser
from ..core.problems import ApiProblem
from ..core.request import AnalysisRequest, RequestJson
from .items import Batch, parse_batch
from .runner import answer_all

CSV_COLUMNS = ("position", "rules", "time_ms", "depth", "nodes")
"""CSV input: a header row naming some of these columns; ``position`` is required, ``rules`` a
preset name or a JSON object, the budgets integers; empty cells are left out."""

Progress = Callable[[int], object]  # tqdm's update returns a flag, ignored


def read_items(path: Path | str) -> list[dict[str, Any]]:
    """Batch items from a ``.csv`` file, else JSON lines (each an item object, or a bare
    position string); ``-`` is standard input (JSON lines)."""
    if str(path) == "-":
        return list(_jsonl(sys.stdin))
    with open(path, encoding="utf-8", newline="") as handle:
        if str(path).lower().endswith(".csv"):
            return list(_csv(handle))
        return list(_jsonl(handle))


def _jsonl(handle: IO[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidNotationError(
                f"line {number} is not JSON ({error})", text=line[:80], field="input"
            ) from None
        yield {"position": item} if isinstance(item, str) else item


def _csv(handle: IO[str]) -> Iterator[dict[str, Any]]:
    reader = csv.DictReader(handle)
    if reader.fieldnames is None or "position" not in reader.fieldnames:
        raise InvalidNotationError(
            "a CSV batch needs a header row with a 'position' column",
            text=",".join(reader.fieldnames or []),
            field="input",
        )
    for number, row in enumerate(reader, start=2):
        item: dict[str, Any] = {"position": row["position"]}
        try:
            rules = (row.get("rules") or "").strip()
            if rules:
                item["rules"] = json.loads(rules) if rules.startswith("{") else rules
            limits = {
                k: int(row[k]) for k in ("time_ms", "depth", "nodes") if (row.get(k) or "").strip()
            }
        except ValueError as error:  # JSONDecodeError is one
            raise InvalidNotationError(
                f"CSV line {number}: {error}", text=str(row)[:80], field="input"
            ) from None
        if limits:
            item["limits"] = limits
        yield item


ITEM_FIELDS = ("position", "rules", "limits")
LIMIT_FIELDS = ("time_ms", "depth", "nodes")


def _check_item(i: int, item: object) -> None:
    """The shape of item ``i`` (an object with a position, rules given as a preset name or an
    object, integer limits); the values themselves are the request type's to check."""
    where = f"positions.{i}"
    if not isinstance(item, Mapping):
        raise ApiProblem("invalid-request", "an item is an object or a position", field=where)
    for name in item:
        if name not in ITEM_FIELDS:
            raise ApiProblem("invalid-request", "unknown field", field=f"{where}.{name}")
    if "position" not in item:
        raise ApiProblem("invalid-request", "missing position", field=f"{where}.position")
    if not isinstance(item["position"], str | dict):
        raise ApiProblem(
            "invalid-request", "a position is a string or an object", field=f"{where}.position"
        )
    if "rules" in item and not isinstance(item["rules"], str | dict):
        raise ApiProblem(
            "invalid-request", "rules are a preset name or an object", field=f"{where}.rules"
        )
    limits = item.get("limits", {})
    if not isinstance(limits, Mapping):
        raise ApiProblem("invalid-request", "limits are an object", field=f"{where}.limits")
    for name, value in limits.items():
        if name not in LIMIT_FIELDS:
            raise ApiProblem("invalid-request", "unknown field", field=f"{where}.limits.{name}")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ApiProblem(
                "invalid-request", "an integer is expected", field=f"{where}.limits.{name}"
            )


def parse_local(
    items: Sequence[Mapping[str, Any]], rules: object, limits: Mapping[str, Any]
) -> Batch:
    """The batch as the server would parse it (a malformed item is an error naming
    ``positions.<i>.<field>``; an item whose position or rules do not parse gets a problem
    object in its line), without the server's size and budget limits."""
    for i, item in enumerate(items):
        _check_item(i, item)
    settings = dataclasses.replace(
        load_settings(), batch_max_positions=len(items) or 1, batch_max_budget_ms=1 << 62
    )
    return parse_batch(settings, items, rules, limits)


def _ignore_sigint() -> None:
    """A pool process leaves Ctrl-C to its parent, which stops the pool itself: a child
    killed by the terminal's SIGINT mid-task would leave ``imap`` waiting for it forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


MakeAnalyser = Callable[[], Analyser]
"""This process's analyser (a module-level function: each pool process calls it for its own,
the commands pass :func:`kalah_service.ops.backends.default_analyser`)."""


def _answer_some(
    piece: tuple[MakeAnalyser, int, list[RequestJson]],
) -> tuple[int, list[bytes]]:
    """One pool process's share (its first position in the run, its tasks): the tasks'
    answers, through the one batch loop."""
    make, start, tasks = piece
    requests = [AnalysisRequest.from_json(task) for task in tasks]
    return start, [answered.body for answered in answer_all(make(), requests)]


class Interrupted(Exception):
    """Ctrl-C stopped a local batch: ``lines`` has every slot, ``null`` for one whose task
    was not finished; ``finished`` tasks of ``total`` were."""

    def __init__(self, lines: list[bytes], finished: int, total: int) -> None:
        super().__init__(f"interrupted after {finished} of {total} positions")
        self.lines = lines
        self.finished = finished
        self.total = total


def run_local(
    batch: Batch, workers: int, make: MakeAnalyser, progress: Progress | None = None
) -> list[bytes]:
    """Every slot's answer in input order, the distinct tasks spread over ``workers``
    processes (grouped by rules, so each process's table serves one rule set at a time).
    Ctrl-C stops the processes at once and raises :class:`Interrupted` with the answers
    finished so far."""
    order = sorted(range(len(batch.tasks)), key=lambda k: batch.tasks[k].key)
    payload = [batch.tasks[k].to_json() for k in order]
    size = max(1, min(32, len(payload) // (workers * 8) or 1)) if workers > 1 else 1
    pieces = [(make, i, payload[i : i + size]) for i in range(0, len(payload), size)]
    answers: list[bytes | None] = [None] * len(batch.tasks)
    # spawn, not fork: a process with threads (a server, a test run) may be inside SQLite or
    # another lock when it forks, and the child would wait on that lock forever.
    pool = (
        multiprocessing.get_context("spawn").Pool(workers, initializer=_ignore_sigint)
        if workers > 1
        else None
    )
    # Unordered: a piece finished is kept at once, so an interrupt loses none of them.
    results: Iterator[tuple[int, list[bytes]]] = (
        map(_answer_some, pieces) if pool is None else pool.imap_unordered(_answer_some, pieces)
    )
    finished = 0
    try:
        for start, piece in results:
            for offset, body in enumerate(piece):
                answers[order[start + offset]] = body
            finished += len(piece)
            if progress is not None:
                progress(len(piece))
    except KeyboardInterrupt:
        if pool is not None:
            pool.terminate()  # the searches in hand are dropped, not waited for
            pool.join()
        lines = batch.assemble(answers)
        raise Interrupted(lines, finished, len(batch.tasks)) from None
    if pool is not None:
        pool.close()
        pool.join()
    return batch.assemble(answers)


def write_jsonl(lines: Sequence[bytes], out: IO[bytes]) -> None:
    for line in lines:
        out.write(line + b"\n")
