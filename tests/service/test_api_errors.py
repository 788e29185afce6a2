"""Every error path answers RFC 9457 problem+json naming the offending field; never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from figures import tried
from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st
from service_fixtures import embedded_app

from kalah_core import Position, Rules, play

PROBLEM = "application/problem+json"
A = "/v1/analysis"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    """One app for the module: its requests are refused, or answered alike whatever an
    earlier one cached (an app each cost more than its requests)."""
    return embedded_app(tmp_path_factory.mktemp("answers")).test_client()


def check_problem(
    response: Any, status: int, field: str | None, type_: str | None = None
) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM
    body: dict[str, Any] = response.get_json()
    assert {"type", "title", "status", "detail", "instance"} <= set(body)
    assert body["status"] == status
    assert body["detail"]
    assert body.get("field") == field, body
    if type_ is not None:
        assert body["type"] == type_
    return body


GET_CASES = [
    # query, status, field, problem type
    ("", 422, "position", "/problems/invalid-request"),
    ("position=", 422, "position", "/problems/invalid-request"),
    ("position=garbage", 422, "position", "/problems/invalid-notation"),
    ("position=" + "4" * 2000, 422, "position", "/problems/invalid-request"),
    ("position=44-0-44-0-s", 422, "position", "/problems/invalid-position"),
    ("position=444444-0-444444-0-sp", 422, "position", "/problems/invalid-position"),
    ("position=~0a4444-0-444444-0-s", 422, "position", "/problems/invalid-notation"),
    # A rule option's values are checked where every rules input is (the request type), so a
    # query's bad preset or choice is the same problem as a body's.
    ("position=start&rules=nope", 422, "rules", "/problems/invalid-rules"),
    ("position=start&rules=", 422, "rules", "/problems/invalid-rules"),  # found by the fuzzer
    ("position=start&houses=13", 422, "houses", "/problems/invalid-rules"),
    ("position=start&houses=abc", 422, "houses", "/problems/invalid-request"),
    ("position=start&seeds=0", 422, "seeds", "/problems/invalid-rules"),
    ("position=start&capture=sometimes", 422, "capture", "/problems/invalid-rules"),
    ("position=start&pie=maybe", 422, "pie", "/problems/invalid-request"),
    ("position=start&time_ms=0", 422, "time_ms", "/problems/invalid-request"),
    ("position=start&time_ms=x", 422, "time_ms", "/problems/invalid-request"),
    ("position=start&depth=0", 422, "depth", "/problems/invalid-request"),
    ("position=start&bogus=1", 422, "bogus", "/problems/invalid-request"),
]


@pytest.mark.parametrize(("query", "status", "field", "type_"), GET_CASES)
@pytest.mark.parametrize("path", ["/v1/analysis", "/v1/best-move"])
def test_get_errors(
    client: FlaskClient, path: str, query: str, status: int, field: str, type_: str
) -> None:
    if path == "/v1/best-move" and query.startswith("position=start&depth"):
        field = "depth"  # best-move takes no depth: an unknown parameter, same field
    check_problem(client.get(f"{path}?{query}"), status, field, type_)


@pytest.mark.parametrize(
    ("query", "field", "maximum"),
    [
        ("time_ms=5001", "time_ms", 5000),
        ("depth=101", "depth", 100),
        ("nodes=10000000000", "nodes", 1_000_000_000),
    ],
)
def test_get_limits_above_the_maximum(
    client: FlaskClient, query: str, field: str, maximum: int
) -> None:
    body = check_problem(
        client.get(f"{A}?position=start&{query}"), 422, field, "/problems/limit-exceeded"
    )
    assert body["max"] == maximum
    assert str(maximum) in body["detail"]


POST_CASES = [
    # body, status, field, problem type
    ({}, 422, "position", "/problems/invalid-request"),
    ({"position": 5}, 422, "position", "/problems/invalid-request"),
    ({"position": None}, 422, "position", "/problems/invalid-request"),
    ({"position": "x" * 1025}, 422, "position", "/problems/invalid-request"),
    ({"position": "start", "extra": 1}, 422, "extra", "/problems/invalid-request"),
    ({"position": {"south": [4] * 6}}, 422, "position.north", "/problems/invalid-position"),
    ({"position": {"south": [4] * 6, "north": [4] * 6, "color": 1}}, 422, "position.color", None),
    (
        {"position": {"south": [4] * 6, "north": [-1] * 6}},
        422,
        "position.north",
        "/problems/invalid-position",
    ),
    (
        {"position": {"south": [4] * 6, "north": [4] * 6, "to_move": "east"}},
        422,
        "position.to_move",
        None,
    ),
    (
        {"position": {"south": [4] * 6, "north": [4] * 6, "stores": [1]}},
        422,
        "position.stores",
        None,
    ),
    (
        {"position": {"south": [200] * 6, "north": [4] * 6}},
        422,
        "position",
        "/problems/invalid-position",
    ),
    (
        {"position": {"south": [4] * 6, "north": [4] * 6, "swap_available": True}},
        422,
        "position",
        None,
    ),
    ({"position": "{not json"}, 422, "position", "/problems/invalid-position"),
    ({"position": "start", "rules": "nope"}, 422, "rules", "/problems/invalid-rules"),
    ({"position": "start", "rules": 5}, 422, "rules", "/problems/invalid-request"),
    (
        {"position": "start", "rules": {"preset": "nope"}},
        422,
        "rules.preset",
        "/problems/invalid-rules",
    ),
    ({"position": "start", "rules": {"preset": 3}}, 422, "rules.preset", "/problems/invalid-rules"),
    ({"position": "start", "rules": {"houses": 0}}, 422, "rules.houses", "/problems/invalid-rules"),
    (
        {"position": "start", "rules": {"houses": True}},
        422,
        "rules.houses",
        "/problems/invalid-rules",
    ),
    ({"position": "start", "rules": {"end": "never"}}, 422, "rules.end", "/problems/invalid-rules"),
    ({"position": "start", "rules": {"bogus": 1}}, 422, "rules.bogus", "/problems/invalid-rules"),
    ({"position": "start", "limits": 5}, 422, "limits", "/problems/invalid-request"),
    (
        {"position": "start", "limits": {"time_ms": "fast"}},
        422,
        "limits.time_ms",
        "/problems/invalid-request",
    ),
    (
        {"position": "start", "limits": {"time_ms": -1}},
        422,
        "limits.time_ms",
        "/problems/invalid-request",
    ),
    (
        {"position": "start", "limits": {"depth": 101}},
        422,
        "limits.depth",
        "/problems/limit-exceeded",
    ),
    (
        {"position": "start", "limits": {"speed": 1}},
        422,
        "limits.speed",
        "/problems/invalid-request",
    ),
]


@pytest.mark.parametrize(("body", "status", "field", "type_"), POST_CASES)
def test_post_errors(
    client: FlaskClient, body: Any, status: int, field: str, type_: str | None
) -> None:
    check_problem(client.post(A, json=body), status, field, type_)


def test_time_budget_above_the_maximum_names_the_field_and_the_max(client: FlaskClient) -> None:
    body = check_problem(
        client.post(A, json={"position": "start", "limits": {"time_ms": 60000}}),
        422,
        "limits.time_ms",
        "/problems/limit-exceeded",
    )
    assert body["max"] == 5000 and "5000" in body["detail"]


def test_malformed_json_body(client: FlaskClient) -> None:
    check_problem(
        client.post(A, data="{bad", content_type="application/json"),
        400,
        "body",
        "/problems/malformed-body",
    )


def test_json_body_that_is_not_an_object(client: FlaskClient) -> None:
    check_problem(client.post(A, json=[1, 2]), 422, "body", "/problems/invalid-request")


def test_oversize_body(client: FlaskClient) -> None:
    body = check_problem(
        client.post(A, data=b"{" + b" " * 70000 + b"}", content_type="application/json"),
        413,
        "body",
        "/problems/body-too-large",
    )
    assert body["max"] == 65536


def test_not_found_and_method_not_allowed(client: FlaskClient) -> None:
    check_problem(client.get("/v2/analysis"), 404, None, "about:blank")
    response = client.delete("/v1/rules")
    check_problem(response, 405, None, "about:blank")
    assert "GET" in response.headers["Allow"]
    check_problem(client.put(A, json={}), 405, None)
    check_problem(client.get("/v1/play"), 405, None)


def test_problem_types_resolve(client: FlaskClient) -> None:
    body = check_problem(client.get(f"{A}?position=garbage"), 422, "position")
    described = client.get(body["type"])
    assert described.status_code == 200
    assert described.get_json()["status"] == 422
    check_problem(client.get("/problems/no-such-problem"), 404, None)


PLAY_CASES = [
    ({"moves": [3, 3]}, 422, "moves.1", "/problems/illegal-move"),
    ({"moves": [7]}, 422, "moves.0", "/problems/illegal-move"),
    ({"moves": ["swap"]}, 422, "moves.0", "/problems/illegal-move"),
    ({"moves": ["x"]}, 422, "moves.0", "/problems/invalid-request"),
    ({"moves": [True]}, 422, "moves.0", "/problems/invalid-request"),
    ({"moves": 3}, 422, "moves", "/problems/invalid-request"),
    ({"moves": [1] * 1025}, 422, "moves", "/problems/invalid-request"),
    ({"game": "1-x"}, 422, "game", "/problems/invalid-notation"),
    ({"game": "1-2-3"}, 422, "game", "/problems/invalid-notation"),
    ({"game": "3-1"}, 422, "game", "/problems/illegal-move"),  # 3 ends in the store: South again
    ({"game": "1*-"}, 422, "game", "/problems/illegal-move"),
    ({"game": "1-" * 3000}, 422, "game", "/problems/invalid-request"),
    ({"game": ""}, 422, "game", "/problems/invalid-request"),
    ({"game": "1-", "moves": [1]}, 422, "game", "/problems/invalid-request"),
    ({"position": "000000-30-000012-15-s", "moves": [5]}, 422, "moves.0", "/problems/illegal-move"),
    ({"rules": {"houses": 13}}, 422, "rules.houses", "/problems/invalid-rules"),
    ({"position": "44-0-44-0-s"}, 422, "position", "/problems/invalid-position"),
]


@pytest.mark.parametrize(("body", "status", "field", "type_"), PLAY_CASES)
def test_play_errors(client: FlaskClient, body: Any, status: int, field: str, type_: str) -> None:
    check_problem(client.post("/v1/play", json=body), status, field, type_)


def test_engine_errors_are_problems_too(client: FlaskClient) -> None:
    """A position the engine rejects under the rules (here: swap flag without the pie rule)."""
    rules = Rules.preset("kalah-pie", houses=3, seeds=2)
    after = play(Position.start(rules), rules, 1).after
    check_problem(client.get(f"{A}?position={after.compact()}&houses=3&seeds=2"), 422, "position")


@given(st.text(max_size=80))
def test_no_position_text_gives_a_server_error(text: str) -> None:
    tried("API: position query text")
    from kalah_service import create_app

    client = _fuzz_client(create_app)
    response = client.get(
        A, query_string={"position": text, "houses": 3, "seeds": 3, "time_ms": 50}
    )
    assert response.status_code in (200, 400, 422), response.get_data(as_text=True)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-3, 300) | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=8)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "south",
                        "north",
                        "stores",
                        "to_move",
                        "swap_available",
                        "houses",
                        "seeds",
                        "preset",
                        "x",
                    ]
                ),
                inner,
                max_size=5,
            )
        ),
        max_leaves=20,
    )
)
def test_no_json_position_or_rules_gives_a_server_error(value: Any) -> None:
    tried("API: JSON position and rules bodies")
    from kalah_service import create_app

    client = _fuzz_client(create_app)
    for body in (
        {"position": value, "rules": {"houses": 3, "seeds": 3}},
        {"position": "start", "rules": value},
    ):
        response = client.post(A, json=body)
        assert response.status_code in (200, 400, 422), response.get_data(as_text=True)
        if response.status_code != 200:
            assert response.mimetype == PROBLEM and response.get_json()["field"]


_FUZZ_CLIENT: dict[str, Any] = {}


def _fuzz_client(create_app: Any) -> FlaskClient:
    if "client" not in _FUZZ_CLIENT:
        _FUZZ_CLIENT["client"] = create_app({"TESTING": True, "KALAH_REDIS_URL": ""}).test_client()
    client: FlaskClient = _FUZZ_CLIENT["client"]
    return client


def test_a_bug_is_a_500_problem_without_internals(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal state")

    monkeypatch.setattr(app.extensions["kalah"], "search", broken)
    response = app.test_client().get(f"{A}?position=start&houses=2&seeds=3")
    body = check_problem(response, 500, None, "/problems/internal-error")
    assert "secret" not in body["detail"]


def test_a_broken_engine_fails_the_readiness_check(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The self-test solves a tiny position with a fresh engine: one that fails makes
    ``/readyz`` a 503 naming the engine check (and is retried on the next check)."""
    from kalah_service.core import analyser

    class Broken(analyser.Engine):
        def analyse(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("engine failure")

    monkeypatch.setattr(analyser, "Engine", Broken)
    ready = app.test_client().get("/readyz")
    assert ready.status_code == 503
    check = ready.get_json()["checks"]["engine"]
    assert check["ok"] is False and "engine failure" in check["detail"]
    monkeypatch.undo()
    assert app.test_client().get("/readyz").status_code == 200


def test_the_documented_statuses_are_the_problem_table() -> None:
    """docs/api.md's table of statuses lists every problem type under its one status."""
    import re
    from pathlib import Path

    from kalah_service.core.problems import PROBLEMS

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    documented: dict[int, set[str]] = {}
    for status, types in re.findall(r"^\| (\d{3}) \| ([^|]+) \|", text, re.MULTILINE):
        documented[int(status)] = set(re.findall(r"`([a-z-]+)`", types))
    table: dict[int, set[str]] = {}
    for problem in PROBLEMS.values():
        table.setdefault(problem.status, set()).add(problem.slug)
    assert documented == table
    assert PROBLEMS["invalid-notation"].status == PROBLEMS["invalid-position"].status == 422
