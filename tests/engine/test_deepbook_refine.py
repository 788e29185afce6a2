"""Refining the deep book's bounds at a start: on a small board whose every value an unbounded
solve gives, the refined bounds hold every exact value, narrow the start and widen nothing;
a checkpoint resumes a pass; a node budget ends it at the same place every time; every bound a
checkpoint holds reaches the book."""

from __future__ import annotations

import io
import json
import threading
from dataclasses import replace
from functools import cache
from itertools import pairwise
from pathlib import Path

from kalah_core.cli import main
from kalah_core.deepbook import DeepBook, DeepSection, deep_key, key_position, lead
from kalah_core.deepbook_build import DeepBudget, back_up, build_deep_section
from kalah_core.deepbook_refine import HIGH, LOW, RefineBudget, Refiner, refine_section
from kalah_core.position import Position
from kalah_core.rules import Rules
from kalah_core.solver import Engine

# piet-hein's rules (capture always, either side empty, owner) on a small board; budgets small
# enough that the build leaves the start's bounds apart.
RULES = Rules(houses=5, seeds=3, capture="always")
BUILD = DeepBudget(estimate_nodes=3_000, bounds_nodes=3_000, tt_mb=4)
REFINE = RefineBudget(first_nodes=2_000, total_nodes=400_000, tt_mb=4)
ROOT = deep_key(Position.start(RULES), RULES)


@cache
def section() -> DeepSection:
    return build_deep_section(RULES, 2, [BUILD], stream=io.StringIO())


@cache
def refined_and_said() -> tuple[DeepSection, str]:
    out = io.StringIO()
    return refine_section(section(), REFINE, stream=out), out.getvalue()


def refined() -> DeepSection:
    return refined_and_said()[0]


@cache
def exact_gains(key: bytes) -> dict[int, int]:
    position = key_position(key, RULES)
    analysis = Engine(tt_mb=4).analyse(position, RULES)
    assert analysis.exact
    return {int(m.move): m.value - lead(position) for m in analysis.moves}


def test_refined_bounds_hold_the_exact_values_and_only_narrow() -> None:
    before, after = section(), refined()
    assert set(after.records) == set(before.records)
    for key, record in after.records.items():
        gains = exact_gains(key)
        old = before.records[key]
        assert old.lower <= record.lower <= max(gains.values()) <= record.upper <= old.upper
        for m, o in zip(record.moves, old.moves, strict=True):
            assert o.lower <= m.lower <= gains[m.house] <= m.upper <= o.upper, (key.hex(), m)
        assert (record.depth is None) == (record.lower == record.upper)
    assert back_up(RULES, after.records) == after.records
    start, old = after.records[ROOT], before.records[ROOT]
    assert start.upper - start.lower < old.upper - old.lower
    (done,) = after.build["refine"]
    assert done["start"] == {"before": [old.lower, old.upper], "after": [start.lower, start.upper]}
    said = refined_and_said()[1]
    assert " itself >= " in said and " move " in said  # records' and moves' tests both ran
    assert 0 < done["nodes"] <= REFINE.total_nodes + done["caps"]["high"] + done["caps"]["low"]


def test_the_start_targets_step_by_two_seeds_within_thirty_of_its_estimate() -> None:
    # 40 and 30 seeds from the estimate, then every 2 seeds: each proven target makes the next
    # the goal, so that a run that cannot prove a larger step can still land a small one.
    refiner = Refiner(section(), REFINE)
    try:
        start = refiner.records[ROOT]
        for side in (HIGH, LOW):
            refiner.records[ROOT] = replace(
                start, lower=start.estimate - 60, upper=start.estimate + 60
            )
            targets = []
            while (t := refiner.target(side)) is not None:
                targets.append(t)
                proven = {"upper": t} if side == HIGH else {"lower": t}
                refiner.records[ROOT] = replace(refiner.records[ROOT], **proven)
            gaps = [abs(a - b) for a, b in pairwise(targets)]
            assert gaps == [10, 4] + [2] * 12, (side, targets)
            assert abs(targets[-1] - start.estimate) <= 3  # 2 seeds, and the values' parity
    finally:
        refiner.close()


def test_a_stop_ends_a_refinement_with_what_its_checkpoint_proves(tmp_path: Path) -> None:
    # What SIGTERM and Ctrl-C do to kalah book refine (tests/system): the run ends at once, as
    # at its deadline, and the book gets every bound its checkpoint holds.
    checkpoint = tmp_path / "refine.ckpt"
    budget = replace(REFINE, total_nodes=50_000)  # ends it with claims left
    first = refine_section(section(), budget, checkpoint=checkpoint, stream=io.StringIO())
    stop = threading.Event()
    stop.set()
    unbounded = replace(REFINE, total_nodes=None)
    again = refine_section(
        section(), unbounded, checkpoint=checkpoint, stop=stop, stream=io.StringIO()
    )
    start = again.records[ROOT]
    assert (start.lower, start.upper) == (first.records[ROOT].lower, first.records[ROOT].upper)
    assert again.build["refine"][-1]["searched"] == 0
    assert start.upper - start.lower < section().records[ROOT].upper - section().records[ROOT].lower


def test_a_checkpoint_resumes_and_a_node_budget_ends_it_alike(tmp_path: Path) -> None:
    path = tmp_path / "refine.jsonl"
    half = RefineBudget(REFINE.first_nodes, REFINE.total_nodes // 2, REFINE.tt_mb)
    first = refine_section(section(), half, checkpoint=path, stream=io.StringIO())
    lines = path.read_text().splitlines()
    assert lines and all(json.loads(line)["rules"] == RULES.key for line in lines)
    out = io.StringIO()
    again = refine_section(section(), half, checkpoint=path, stream=out)
    assert again.records == first.records
    said = out.getvalue().splitlines()
    assert said and not [line for line in said if line.startswith("  ")]  # no test line
    assert len(path.read_text().splitlines()) == len(lines)  # nothing searched again
    # Resumed with the whole budget, the pass ends where one run with it ends.
    whole = refine_section(section(), REFINE, checkpoint=path, stream=io.StringIO())
    assert whole.records == refined().records
    # A pass that stops earlier still puts every bound the checkpoint holds into the book.
    quarter = RefineBudget(REFINE.first_nodes, REFINE.total_nodes // 4, REFINE.tt_mb)
    early = refine_section(section(), quarter, checkpoint=path, stream=io.StringIO())
    assert early.records == whole.records


def test_the_command_refines_one_section_and_keeps_the_others(tmp_path: Path) -> None:
    other = build_deep_section(RULES.replace(houses=4), 1, [BUILD], stream=io.StringIO())
    path = tmp_path / "deep.xz"
    DeepBook([section(), other]).save(path)
    args = ["book", "refine", "--rules", "piet-hein", "--houses", "5", "--seeds", "3"]
    args += ["--first-mnodes", "0.002", "--total-mnodes", "0.4", "--tt-mb", "4", "-o", str(path)]
    assert main([*args, "--json"]) == 0
    book = DeepBook.load(path)
    assert book.sections[other.rules.key].records == other.records
    assert book.sections[RULES.key].records == refined().records


def test_a_warm_refinement_on_two_threads_proves_what_a_cold_one_does(tmp_path: Path) -> None:
    """``--warm --threads 2``: which tests run differs, but every verdict is a fact, so a pass
    run to its end proves the cold pass's bounds at the start, searching less."""
    found = []
    for flags in ([], ["--warm", "--threads", "2"]):
        path = tmp_path / f"deep{len(flags)}.xz"
        DeepBook([section()]).save(path)
        args = ["book", "refine", "--rules", "piet-hein", "--houses", "5", "--seeds", "3"]
        args += ["--first-mnodes", "0.002", "--tt-mb", "4", "-o", str(path), *flags]
        assert main(args) == 0
        refined_section = DeepBook.load(path).sections[RULES.key]
        found.append((refined_section.records[ROOT], refined_section.build["refine"][-1]))
    (cold, cold_pass), (warm, warm_pass) = found
    value = max(exact_gains(ROOT).values())
    assert warm.lower == cold.lower and warm.upper == cold.upper
    assert cold.lower <= value <= cold.upper and cold.upper - cold.lower < 4
    assert (cold_pass["warm"], warm_pass["warm"], warm_pass["threads"]) == (False, True, 2)
    assert warm_pass["searched"] < cold_pass["searched"]


def test_a_refinement_of_one_side_claims_only_that_sides_bounds() -> None:
    """``--side upper``: the pass claims only "value <= t" at the start (the other bound may
    move all the same, by the tests' fail-soft bounds), and proves the upper bound a pass of
    both sides (run to its end) proves."""
    whole = RefineBudget(first_nodes=2_000, total_nodes=None, tt_mb=4)
    both = refine_section(section(), whole, stream=io.StringIO()).records[ROOT]
    said = io.StringIO()
    upper = refine_section(section(), whole, stream=said, sides=[HIGH]).records[ROOT]
    claims = [line for line in said.getvalue().splitlines() if " start: value " in line]
    assert claims and all(" start: value <= " in line for line in claims)
    assert upper.upper == both.upper < section().records[ROOT].upper
