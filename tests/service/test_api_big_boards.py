"""Boards beyond 8 houses and 255 seeds through the API: the kgp preset, 12 houses, up to 24
seeds a house and 600 seeds in a position (issue 34). Through the test client, and one over
real HTTP (gunicorn)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from test_api_analysis import check_consistent

from kalah_core import Rules
from kalah_core.position import MAX_SEEDS
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS, PRESET_DOCS

KGP_12 = "position=start&rules=kgp&houses=12&seeds=12"
"""The URL of issue 34: analysis of KGP's largest board."""


def check_big_board_estimate(answer: dict[str, Any]) -> None:
    rules = Rules.preset("kgp", houses=12, seeds=12)
    assert answer["rules"] == rules.to_json()
    assert answer["position"] == "cccccccccccc-0-cccccccccccc-0-s"
    assert answer["exact"] is False  # 288 seeds a side: no proof within a second
    assert isinstance(answer["depth"], int) and answer["depth"] >= 1
    assert -rules.total_seeds <= answer["lower"] <= answer["value"] <= answer["upper"]
    assert answer["upper"] <= rules.total_seeds
    assert [m["move"] for m in sorted(answer["moves"], key=lambda m: m["move"])] == list(
        range(1, 13)
    )
    check_consistent(answer, rules)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("position=start&rules=kgp&houses=13", "houses"),
        ("position=start&rules=kgp&seeds=25", "seeds"),
        ("position=start&rules=kgp&houses=0", "houses"),
    ],
)
def test_counts_beyond_the_limits_are_422_naming_the_field(
    client: FlaskClient, query: str, field: str
) -> None:
    response = client.get(f"/v1/analysis?{query}")
    assert response.status_code == 422
    assert response.content_type == "application/problem+json"
    assert response.get_json()["field"] == field


def test_rules_list_the_kgp_preset_and_the_limits(client: FlaskClient) -> None:
    info = client.get("/v1/rules").get_json()
    presets = {p["name"]: p for p in info["presets"]}
    assert presets["kgp"]["rules"] == Rules.preset("kgp").to_json()
    assert presets["kgp"]["rules"]["majority"] is True
    assert presets["kgp"]["description"] == PRESET_DOCS["kgp"]
    options = {o["name"]: o for o in info["options"]}
    assert options["houses"]["values"] == [1, MAX_HOUSES]
    assert options["seeds"]["values"] == [1, MAX_START_SEEDS]
    assert info["limits"]["max_seeds"] == MAX_SEEDS


def test_play_and_the_notation_on_twelve_houses(client: FlaskClient) -> None:
    rules = {"preset": "kgp", "houses": 12, "seeds": 1}
    answer = client.post("/v1/play", json={"rules": rules, "moves": [12, 10]}).get_json()
    assert answer["game"] == "ca-"
    again = client.post("/v1/play", json={"rules": rules, "game": "ca-"}).get_json()
    assert again["position"] == answer["position"]


def test_board_image_of_twelve_houses(client: FlaskClient) -> None:
    response = client.get(f"/v1/board.svg?{KGP_12}&move=12")
    assert response.status_code == 200
    assert response.content_type.startswith("image/svg+xml")
    assert b"move 12" in response.data
    assert client.get(f"/v1/board.svg?{KGP_12}&move=13").status_code == 422
