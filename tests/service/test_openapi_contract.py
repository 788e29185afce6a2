"""The OpenAPI contract third parties build on: operation ids, named schemas, required answer
fields, and a client generated with ``openapi-python-client`` from the served spec whose use
type-checks (mypy, strict) and works against a real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask.testing import FlaskClient

from kalah_core.rules import PRESETS

if TYPE_CHECKING:
    pass

NAMED = ("Position", "Rules", "PresetName", "Limits", "Move", "MoveValue", "Analysis", "Problem")

USAGE = '''\
"""A third party's script: every answer field used plainly, rules given as a preset name."""

import sys

from kalah_client import AuthenticatedClient
from kalah_client.api.analysis import analyse, analyse_query, best_move
from kalah_client.api.play import play
from kalah_client.models import (
    Analysis,
    AnalysisRequest,
    BestMoveAnswer,
    Limits,
    PlayAnswer,
    PlayRequest,
    PositionObject,
    Problem,
    RulesOverrides,
)


def main(base_url: str, key: str) -> None:
    client = AuthenticatedClient(base_url=base_url, token=key)

    small = analyse.sync(
        client=client,
        body=AnalysisRequest(position="start", rules=RulesOverrides(houses=3, seeds=3)),
    )
    assert isinstance(small, Analysis), small
    moves: list[tuple[int | str, int, bool, str]] = [
        (m.move, m.value, m.exact, m.position) for m in small.moves
    ]
    print("h3s3", small.value, small.exact, small.lower, small.upper, moves)
    assert small.exact and small.value == 2 and small.depth is None

    board = PositionObject(south=[1, 0, 2], north=[0, 1, 1], stores=[5, 8])
    three = RulesOverrides(preset="kalah", houses=3)
    mid = analyse.sync(
        client=client,
        body=AnalysisRequest(position=board, rules=three, limits=Limits(time_ms=2000)),
    )
    assert isinstance(mid, Analysis), mid
    assert mid.board.south == [1, 0, 2] and mid.limits.time_ms == 2000
    print("board", mid.position, mid.value, mid.best_moves, mid.pv)

    query = analyse_query.sync(client=client, position="start", rules="kalah", houses=3, seeds=3)
    assert isinstance(query, Analysis) and query.value == small.value and query.cached

    best = best_move.sync(client=client, position="start", rules="kalah-pie", houses=2, seeds=2)
    assert isinstance(best, BestMoveAnswer), best
    print("best", best.best_move, best.value, best.exact)

    played = play.sync(client=client, body=PlayRequest(rules="kalah", moves=[3]))
    assert isinstance(played, PlayAnswer), played
    assert played.steps[0].extra_turn and played.status.to_move == "south"

    bad = analyse.sync(
        client=client, body=AnalysisRequest(position="start", rules=RulesOverrides(houses=13))
    )
    assert isinstance(bad, Problem) and bad.status == 422, bad
    print("problem", bad.field, bad.title)
    assert bad.field == "rules.houses"


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
'''

ANONYMOUS = '''\
"""A third party's script without an API key: the generated client used as it comes."""

import sys

from kalah_client import Client
from kalah_client.api.analysis import analyse_query
from kalah_client.api.board import get_board_image
from kalah_client.api.games import analyse_game
from kalah_client.models import Analysis, GameAnswer, GameLimits, GameRequest, Problem
from kalah_client.types import File

GAME = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"


def main(base_url: str) -> None:
    client = Client(base_url=base_url)

    small = analyse_query.sync(client=client, position="start", houses=3, seeds=3)
    assert isinstance(small, Analysis), small
    print("anonymous", small.value, small.exact)

    # A small budget: the anonymous bucket is charged by the budget reserved.
    body = GameRequest(game=GAME, rules="kalaha", limits=GameLimits(time_ms=2000))
    review = analyse_game.sync(client=client, body=body)
    assert isinstance(review, GameAnswer), review
    losses: list[int] = [move.loss for move in review.moves]
    print("review", len(review.moves), sum(losses) >= 0)

    neither = analyse_game.sync(client=client, body=GameRequest(rules="kalaha"))
    assert isinstance(neither, Problem) and neither.status == 422, neither

    image = get_board_image.sync(client=client, position="start", rules="kalaha", move=3)
    assert isinstance(image, File), image
    svg: bytes = image.payload.read()
    print("image", svg[:4].decode(), len(svg))


if __name__ == "__main__":
    main(sys.argv[1])
'''

LIVE_MD = Path(__file__).resolve().parents[2] / "docs" / "live.md"
LIVE_EXAMPLE = LIVE_MD.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
"""docs/live.md's typed client of the live analysis: type-checked and run as it is printed."""

CONFIG = """\
project_name_override: kalah_client
package_name_override: kalah_client
literal_enums: true
post_hooks: []
"""


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if method != "parameters"
    ]


def test_every_operation_has_a_unique_operation_id(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    ids = [operation.get("operationId") for _, _, operation in operations(spec)]
    assert None not in ids and len(set(ids)) == len(ids), ids
    assert {"analyse", "analyseQuery", "bestMove", "analyseBatch", "analyseGame"} <= set(ids)


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[1]} if "$ref" in node else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def test_shared_vocabulary_is_named_and_referenced(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    schemas = spec["components"]["schemas"]
    assert set(NAMED) <= set(schemas)
    for name, field in (
        ("AnalysisRequest", "position"),
        ("AnalysisRequest", "rules"),
        ("AnalysisRequest", "limits"),
        ("PlayRequest", "position"),
        ("GameRequest", "rules"),
        ("BatchItem", "position"),
        ("BatchItem", "rules"),
        ("Analysis", "moves"),
    ):
        assert _refs(schemas[name]["properties"][field]), (name, field)
    # no position or preset list written out inline: only the named schemas hold them
    presets = json.dumps(sorted(PRESETS))
    for name, schema in schemas.items():
        text = json.dumps(schema, sort_keys=True)
        assert (presets in text.replace(json.dumps(list(PRESETS)), presets)) == (
            name == "PresetName"
        ), name
        assert ('"swap_available"' in text) == (name in ("PositionObject", "Board")), name
    # a preset name is accepted wherever rules go
    assert {"$ref": "#/components/schemas/PresetName"} in schemas["Rules"]["oneOf"]


def test_answer_fields_that_are_always_present_are_required(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    schemas = spec["components"]["schemas"]
    answer = client.get("/v1/analysis?position=start&houses=3&seeds=3").get_json()
    assert sorted(schemas["Analysis"]["required"]) == sorted(answer)
    assert sorted(schemas["MoveValue"]["required"]) == sorted(answer["moves"][0])
    assert set(schemas["Problem"]["required"]) == {"type", "title", "status", "detail"}


def test_the_client_is_generated_whole_and_anonymous_use_needs_no_key(client: FlaskClient) -> None:
    """Security is optional on every /v1 operation (said once at the root: a client generator
    reads an operation's own security as required); the game-review body is a named object
    schema, not a top-level oneOf; board.svg is a typed binary answer."""
    spec = client.get("/openapi.json").get_json()
    assert spec["security"] == [{}, {"apiKey": []}]
    for method, path, operation in operations(spec):
        assert operation.get("security", spec["security"]) in ([], spec["security"]), path
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        assert "oneOf" not in body.get("schema", {}), (method, path)
    game = spec["components"]["schemas"]["GameRequest"]
    assert (
        game["type"] == "object"
        and "oneOf" not in game
        and {"game", "moves"} <= set(game["properties"])
    )
    content = spec["paths"]["/v1/board.svg"]["get"]["responses"]["200"]["content"]
    for media in ("image/svg+xml", "application/octet-stream"):
        assert content[media]["schema"] == {
            **content[media]["schema"],
            "type": "string",
            "format": "binary",
        }
    svg = client.get("/v1/board.svg?position=start")
    assert svg.mimetype == "image/svg+xml" and svg.data.startswith(b"<svg")
    raw = client.get("/v1/board.svg?position=start", headers={"Accept": "application/octet-stream"})
    assert raw.mimetype == "application/octet-stream" and raw.data == svg.data
