"""The system tests of tests/engine/test_review.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import test_review
from test_review import EXAMPLE, EXAMPLE_LOSSES, evaluator

from kalah_core import Rules
from kalah_core.game import Game, outcome
from kalah_core.review import review_fi
from kalah_core.solver import Engine

engine = test_review.engine  # the fixture these tests share with test_review.py


def test_example_game_exact_losses(engine: Engine) -> None:
    rules = Rules.preset("kalaha")
    review = review_fi(rules, EXAMPLE, evaluator(engine, rules))
    assert review.exact
    assert [e.loss for e in review.entries] == EXAMPLE_LOSSES
    assert review.annotated_fi() == "4?5-46?, 1*?!-5, 2?!-63*, 6??-561646562*, 4-3, 656-"
    summary = review.summary()
    assert summary["south"]["total_loss"] == 18 and summary["south"]["sowings"] == 9
    assert summary["south"]["judgements"] == {
        "best": 5,
        "inaccuracy": 2,
        "mistake": 1,
        "blunder": 1,
    }
    assert summary["north"]["total_loss"] == 4 and summary["north"]["sowings"] == 15


def test_values_after_match_a_fresh_analysis_of_the_next_position() -> None:
    """value_after is the value of the move in the analysis before; it must equal the mover's
    value of the position it leads to, analysed on its own by a fresh engine."""
    rules = Rules.preset("kalaha")
    review = review_fi(rules, EXAMPLE, evaluator(Engine(tt_mb=64), rules))
    fresh = Engine(tt_mb=64)
    game = Game.parse_fi(EXAMPLE, rules)
    for entry, result in zip(review.entries, game.history, strict=True):
        after = result.after
        final = outcome(after, rules)
        if final is not None:
            me = 0 if result.mover.value == "south" else 1
            value = final.score[me] - final.score[1 - me]
        else:
            value = fresh.analyse(after, rules).value
            if after.to_move is not result.mover:
                value = -value
        assert entry.value_after == value, entry
        assert entry.loss == entry.value_before - value >= 0
