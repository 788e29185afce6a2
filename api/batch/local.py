"""``kalah batch`` without a server: read items (JSONL or CSV), analyse the distinct ones on
every core, write one JSON line per item in input order.

Each process keeps one warm :class:`Analyser` (engine, transposition table, cache) for all its
tasks, and every task goes through :meth:`Analyser.analyse`, so a line equals the answer of
``POST /v1/analysis`` (with ``KALAH_REDIS_URL`` set, the same shared cache too).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from kalah_core.errors import InvalidNotationError

from ..config import load_settings
from ..core.analyser import default_analyser
from ..core.problems import ApiProblem
from ..core.request import AnalysisRequest
from .items import Batch, parse_batch

CSV_COLUMNS = ("position", "rules", "time_ms", "depth", "nodes")
"""CSV input: a header row naming some of these columns; ``position`` is required, ``rules`` a
preset name or a JSON object, the budgets integers; empty cells are left out."""

Progress = Callable[[int], None]


def read_items(path: Path | str) -> list[dict[str, Any]]:
    """Batch items from a ``.csv`` file, else JSON lines (each an item object, or a bare
    position string); ``-`` is standard input (JSON lines)."""
    if str(path) == "-":
        import sys

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


def parse_local(
    items: Sequence[Mapping[str, Any]], rules: object, limits: Mapping[str, Any]
) -> Batch:
    """The batch as the server would parse it (the same schema, so a malformed item is an
    error naming ``positions.<i>.<field>``), without the server's size and budget limits."""
    from marshmallow import ValidationError

    from ..errors import _first_field
    from .schemas import BatchRequestSchema

    try:
        data = BatchRequestSchema().load(
            {"positions": list(items), "rules": rules, "limits": limits}
        )
    except ValidationError as error:
        field, reason = _first_field(error.messages)
        raise ApiProblem("invalid-request", reason, field=field) from None
    settings = dataclasses.replace(
        load_settings(), batch_max_positions=len(items) or 1, batch_max_budget_ms=1 << 62
    )
    return parse_batch(settings, data["positions"], data["rules"], data["limits"])


def _answer(task_json: dict[str, Any]) -> bytes:
    return default_analyser().analyse_item(AnalysisRequest.from_json(task_json))


def run_local(batch: Batch, workers: int, progress: Progress | None = None) -> list[bytes]:
    """Every slot's answer in input order, the distinct tasks spread over ``workers``
    processes (grouped by rules, so each process's table serves one rule set at a time)."""
    order = sorted(range(len(batch.tasks)), key=lambda k: batch.tasks[k].key)
    payload = [batch.tasks[k].to_json() for k in order]
    answers: list[bytes] = [b""] * len(batch.tasks)
    chunk = max(1, min(32, len(payload) // (workers * 8) or 1))
    if workers <= 1:
        results: Iterator[bytes] = map(_answer, payload)
        pool = None
    else:
        pool = multiprocessing.get_context("fork").Pool(workers)
        results = pool.imap(_answer, payload, chunksize=chunk)
    try:
        for k, body in zip(order, results, strict=True):
            answers[k] = body
            if progress is not None:
                progress(1)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return batch.assemble(answers)


def write_jsonl(lines: Sequence[bytes], out: IO[bytes]) -> None:
    for line in lines:
        out.write(line + b"\n")
