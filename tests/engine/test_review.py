"""Game review: losses, judgements and the summary, checked against independent analyses."""

from __future__ import annotations

import pytest

from kalah_core import Position, Rules
from kalah_core.game import Game
from kalah_core.results import Analysis
from kalah_core.review import count_text, evaluate_backwards, judge, review_fi, review_moves
from kalah_core.solver import Engine

EXAMPLE = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
# The Finnish article's example game under kalaha: every sowing's exact loss, in order.
EXAMPLE_LOSSES = [4, 0, 0, 4, 2, 0, 2, 0, 0, 10] + [0] * 14


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(tt_mb=64)


def evaluator(engine: Engine, rules: Rules):  # type: ignore[no-untyped-def]
    return lambda p: engine.analyse(p, rules)


def test_judgement_thresholds() -> None:
    assert [judge(n) for n in range(8)] == [
        "best",
        "inaccuracy",
        "inaccuracy",
        "mistake",
        "mistake",
        "mistake",
        "blunder",
        "blunder",
    ]


def test_moves_and_an_illegal_move_names_its_index(engine: Engine) -> None:
    rules = Rules(houses=3, seeds=2)
    start = Position.start(rules)
    review = review_moves(rules, start, [1, 2], evaluator(engine, rules))
    assert [e.move for e in review.entries] == [1, 2]
    with pytest.raises(ValueError) as info:
        review_moves(rules, start, [1, 9], evaluator(engine, rules))
    assert getattr(info.value, "field", None) == "moves.1"


def test_inexact_entries_are_labelled() -> None:
    rules = Rules.preset("kalah", seeds=6)
    engine = Engine(tt_mb=16)

    def shallow(p: Position) -> Analysis:
        return engine.analyse(p, rules, depth=2)

    review = review_fi(rules, "3-", shallow)
    assert not review.exact and not review.entries[0].exact
    assert review.entries[0].loss >= 0
    assert review.summary()["south"]["exact"] is False


def test_evaluate_backwards_gives_late_positions_first_and_shares_the_budget() -> None:
    rules = Rules(houses=3, seeds=2)
    game = Game.parse_fi("1-", rules)
    positions = [r.before for r in game.history] + [game.position]
    seen: list[tuple[str, int]] = []

    def analyse(p: Position, ms: int) -> Analysis:
        seen.append((p.compact(), ms))
        return Analysis(0, True, 0, 0, [], [], [], None, 0, 0.0)

    result = evaluate_backwards(positions, 1000, analyse)
    assert [text for text, _ in seen] == [p.compact() for p in reversed(positions)]
    assert seen[0][1] <= 500 and seen[-1][1] <= 1000
    assert set(result) == {p.compact() for p in positions}


@pytest.mark.parametrize(
    ("count", "judgement", "text"),
    [
        (1, "inaccuracy", "1 inaccuracy"),
        (2, "inaccuracy", "2 inaccuracies"),
        (0, "blunder", "0 blunders"),
        (1, "blunder", "1 blunder"),
        (3, "mistake", "3 mistakes"),
        (1, "best", "1 best sowing"),
    ],
)
def test_count_text_plurals(count: int, judgement: str, text: str) -> None:
    assert count_text(count, judgement) == text
