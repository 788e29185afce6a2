"""The whole declared domain against every entry point that takes a position (issue 47): each
GET and POST endpoint through the test client, an inline batch, and the ``kalah`` commands in
process. No 5xx, no traceback; a valid position is answered (a 4xx only where the caller's
moves may be illegal); on boards the reference can solve, the answer is exact and equals it.

The fast tier runs :data:`FAST_EXAMPLES` cases on each of the 14 entry points; ``--run-slow``
runs ``KALAH_DOMAIN_EXAMPLES`` (default 2,000) on each. Budgets are tiny (a few hundred nodes,
a depth of 1-3 or a few ms) except on solvable boards, which need no more than a moment to
prove.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from domain import Case, cases, moves_for
from figures import tried
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from werkzeug.test import TestResponse

from kalah_core import reference as ref
from kalah_core.cli import main
from kalah_core.position import Side
from kalah_service import create_app

FAST_EXAMPLES = 15
SLOW_EXAMPLES = int(os.environ.get("KALAH_DOMAIN_EXAMPLES", "2000"))
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
"""A failing case is printed whole (its repr names the rules and the position): shrinking a
600-seed board through a search can take minutes."""
SOLVE_MS = 4000
"""The budget on a solvable board: ample (the search stops once the value is proven)."""


@pytest.fixture(scope="module")
def domain_app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    """One app for a module's many cases: the embedded store, no rate limits in the way."""
    folder = tmp_path_factory.mktemp("domain")
    return create_app(
        {
            "TESTING": True,
            "KALAH_REDIS_URL": "",
            "KALAH_MAX_TIME_MS": SOLVE_MS,
            "KALAH_CACHE_DIR": str(folder / "answers"),
            "KALAH_LIMITS": "off",
        }
    )


def tiny_limits(case: Case) -> st.SearchStrategy[dict[str, int]]:
    """A budget that keeps a case fast: ample on a solvable board, tiny elsewhere."""
    if case.solvable:
        return st.just({"time_ms": SOLVE_MS})
    return st.one_of(
        st.builds(lambda n: {"nodes": n}, st.integers(1, 300)),
        st.builds(lambda d: {"depth": d}, st.integers(1, 3)),
        st.builds(lambda t: {"time_ms": t}, st.integers(1, 20)),
    )


def answered(response: TestResponse, *, may_refuse: bool = False) -> dict[str, Any] | None:
    """The body of a 200, or None for a problem where ``may_refuse``; anything else fails."""
    text = response.get_data(as_text=True)
    assert response.status_code < 500, text
    assert "Traceback" not in text
    if response.status_code >= 400:
        assert may_refuse, text
        assert response.mimetype == "application/problem+json", text
        problem = response.json
        assert problem is not None and problem["status"] == response.status_code
        assert problem.get("field") and problem.get("detail"), text
        return None
    assert response.status_code == 200, text
    body = response.json
    assert isinstance(body, dict)
    return body


def check_value(case: Case, answer: dict[str, Any]) -> None:
    """On a solvable board the answer is exact and equals the reference's value."""
    assert answer["position"] == case.compact
    if case.solvable:
        assert answer["exact"], answer
        assert answer["value"] == ref.value(case.position, case.rules), answer


# ------------------------------------------------------------------- the HTTP entry points


def get_analysis(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    limits = data.draw(tiny_limits(case))
    budget = "&".join(f"{k}={v}" for k, v in limits.items())
    body = answered(client.get(f"/v1/analysis?{case.query()}&{budget}"))
    assert body is not None
    check_value(case, body)


def post_analysis(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    position = data.draw(st.sampled_from([case.compact, case.position.to_json()]))
    request = {
        "position": position,
        "rules": case.rules_json,
        "limits": data.draw(tiny_limits(case)),
    }
    body = answered(client.post("/v1/analysis", json=request))
    assert body is not None
    check_value(case, body)


def best_move(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    time_ms = SOLVE_MS if case.solvable else data.draw(st.integers(1, 20))  # its only budget
    budget = f"time_ms={time_ms}"
    body = answered(client.get(f"/v1/best-move?{case.query()}&{budget}"))
    assert body is not None
    if case.solvable:
        assert body["exact"], body
        assert body["value"] == ref.value(case.position, case.rules), body


def play(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    request = {
        "position": case.compact,
        "rules": case.rules_json,
        "moves": data.draw(moves_for(case)),
    }
    answered(client.post("/v1/play", json=request), may_refuse=True)


def game_analysis(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    request = {
        "position": case.compact,
        "rules": case.rules_json,
        "moves": data.draw(moves_for(case)),
        "limits": data.draw(tiny_limits(case)),
    }
    answered(client.post("/v1/games/analysis", json=request), may_refuse=True)


def board_svg(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    move = data.draw(st.none() | st.integers(1, case.rules.houses) | st.just("swap"))
    url = f"/v1/board.svg?{case.query()}" + ("" if move is None else f"&move={move}")
    response = client.get(url)
    if move is None:
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.mimetype == "image/svg+xml"
    elif response.status_code != 200:
        answered(response, may_refuse=True)


def batch_limits(case: Case) -> st.SearchStrategy[dict[str, int]]:
    """A batch of at most 3 items stays inline while their budgets (1 s each when not given)
    add up to at most KALAH_MAX_TIME_MS."""
    return st.just({"time_ms": 1000}) if case.solvable else tiny_limits(case)


def inline_batch(client: FlaskClient, case: Case, data: st.DataObject) -> None:
    """The case beside 0-2 others of their own rules; every item answered as alone."""
    items = [case, *data.draw(st.lists(cases(), max_size=2))]
    request = {
        "positions": [
            {"position": c.compact, "rules": c.rules_json, "limits": data.draw(batch_limits(c))}
            for c in items
        ]
    }
    body = answered(client.post("/v1/batch", json=request))
    assert body is not None
    for item, result in zip(items, body["results"], strict=True):
        check_value(item, result)


HTTP: dict[str, Callable[[FlaskClient, Case, st.DataObject], None]] = {
    "GET /v1/analysis": get_analysis,
    "POST /v1/analysis": post_analysis,
    "GET /v1/best-move": best_move,
    "POST /v1/play": play,
    "POST /v1/games/analysis": game_analysis,
    "GET /v1/board.svg": board_svg,
    "POST /v1/batch (inline)": inline_batch,
}


def _http(domain_app: Flask, entry: str, case: Case, data: st.DataObject) -> None:
    tried(f"domain {entry}")
    try:
        HTTP[entry](domain_app.test_client(), case, data)
    except AssertionError as error:  # the case itself, whatever shrinking gets to print
        raise AssertionError(f"{case!r}: {error}") from None


@pytest.mark.parametrize("entry", HTTP)
@settings(
    max_examples=FAST_EXAMPLES, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow]
)
@given(case=cases(), data=st.data())
def test_http(domain_app: Flask, entry: str, case: Case, data: st.DataObject) -> None:
    _http(domain_app, entry, case, data)


@pytest.mark.slow
@pytest.mark.parametrize("entry", HTTP)
@settings(
    max_examples=SLOW_EXAMPLES, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow]
)
@given(case=cases(), data=st.data())
def test_http_long(domain_app: Flask, entry: str, case: Case, data: st.DataObject) -> None:
    _http(domain_app, entry, case, data)


# ------------------------------------------------------------------ the kalah commands


def _game(case: Case, moves: list[Any]) -> str:
    """A one-turn game in the Finnish notation for the side to move (legal or not)."""
    turn = "".join("abc"[m - 10] if isinstance(m, int) and m >= 10 else str(m) for m in moves)
    return f"{turn}-" if case.position.to_move is Side.SOUTH else f"-{turn}"


def cli_argv(case: Case, data: st.DataObject, command: str) -> tuple[list[str], bool]:
    """The command line for ``command`` on ``case``, and whether it may refuse (exit 2)."""
    rules = case.cli_rules()
    if command in ("show", "moves"):
        return [command, case.compact, *rules], False
    if command == "solve":
        budget = [] if case.solvable else ["--nodes", str(data.draw(st.integers(1, 300)))]
        argv = ["solve", case.compact, "--json", "--tt-mb", "4", "--threads", "1", *budget]
        return [*argv, *rules], False
    if command in ("analyse", "best-move"):
        if case.solvable:
            budget = ["--time-ms", str(SOLVE_MS)]
        else:
            budget = ["--depth", str(data.draw(st.integers(1, 3)))]
        return [command, case.compact, "--json", *budget, *rules], False
    game = _game(case, data.draw(moves_for(case)))
    if command == "replay":
        return ["replay", "--from", case.compact, *rules, "--", game], True
    budget = ["--time-ms", str(data.draw(st.integers(1, 20)))]
    return ["analyse-game", "--from", case.compact, *budget, *rules, "--", game], True


CLI = ("show", "moves", "solve", "analyse", "best-move", "replay", "analyse-game")


def _cli(capsys: pytest.CaptureFixture[str], command: str, case: Case, data: st.DataObject) -> None:
    tried(f"domain kalah {command}")
    note(repr(case))
    argv, may_refuse = cli_argv(case, data, command)
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    assert code == 0 or (may_refuse and code == 2), (argv, code, err)
    if code == 0 and command in ("solve", "analyse", "best-move"):
        answer = json.loads(out)
        if case.solvable:
            assert answer["value"] == ref.value(case.position, case.rules), (argv, answer)


@pytest.fixture
def cli_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KALAH_MAX_TIME_MS", str(SOLVE_MS))
    monkeypatch.setenv("KALAH_REDIS_URL", "")
    yield


@pytest.mark.parametrize("command", CLI)
@settings(
    max_examples=FAST_EXAMPLES,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases(), data=st.data())
def test_cli(
    cli_cache: None,
    capsys: pytest.CaptureFixture[str],
    command: str,
    case: Case,
    data: st.DataObject,
) -> None:
    _cli(capsys, command, case, data)


@pytest.mark.slow
@pytest.mark.parametrize("command", CLI)
@settings(
    max_examples=SLOW_EXAMPLES,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases(), data=st.data())
def test_cli_long(
    cli_cache: None,
    capsys: pytest.CaptureFixture[str],
    command: str,
    case: Case,
    data: st.DataObject,
) -> None:
    _cli(capsys, command, case, data)


# ----------------------------------------------------------------- the strategy itself


@settings(max_examples=200)
@given(case=cases())
def test_the_strategy_draws_valid_positions_under_their_rules(case: Case) -> None:
    assert case.position.is_valid(case.rules)
    assert case.position.houses == case.rules.houses


def test_the_reference_value_of_a_known_start() -> None:
    """The oracle itself: Kalah(1,1) and a hand-checked board."""
    from kalah_core import Position, Rules

    # One house each of one seed: South sows into the store (extra turn), then South's row
    # is empty: North keeps its seed. 1 - 1 = 0.
    rules = Rules.preset("kalah", houses=1, seeds=1)
    assert ref.value(Position.start(rules), rules) == 0
    # Two houses, South to move with (0, 2) against (0, 0): the game is over, 2 - 0.
    rules = Rules.preset("kalah", houses=2)
    assert ref.value(Position((0, 2), (0, 0)), rules) == 2
