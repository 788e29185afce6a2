"""The system tests of tests/service/test_api_big_boards.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import requests
from flask.testing import FlaskClient
from test_api_big_boards import KGP_12, check_big_board_estimate

from kalah_core import Position
from kalah_core.position import MAX_SEEDS
from kalah_core.rules import MAX_HOUSES, MAX_START_SEEDS


def test_kgp_twelve_by_twelve_analysis(client: FlaskClient) -> None:
    response = client.get(f"/v1/analysis?{KGP_12}")
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    check_big_board_estimate(answer)
    assert answer["limits"]["time_ms"] == 1000  # the default budget


def test_biggest_start_and_the_most_seeds(client: FlaskClient) -> None:
    answer = client.get(
        f"/v1/analysis?position=start&rules=kgp&houses={MAX_HOUSES}&seeds={MAX_START_SEEDS}"
        "&time_ms=200"
    ).get_json()
    assert answer["board"]["south"] == [MAX_START_SEEDS] * MAX_HOUSES
    full = Position((MAX_SEEDS - 1,) + (0,) * 11, (1,) + (0,) * 11)
    response = client.post(
        "/v1/analysis",
        json={"position": full.to_json(), "rules": {"preset": "kgp", "houses": 12}},
    )
    assert response.status_code == 200, response.get_json()
    too_many = Position((MAX_SEEDS,) + (0,) * 11, (1,) + (0,) * 11)
    response = client.post(
        "/v1/analysis",
        json={"position": too_many.to_json(), "rules": {"preset": "kgp", "houses": 12}},
    )
    assert response.status_code == 422
    assert response.get_json()["field"].startswith("position")
    assert str(MAX_SEEDS) in response.get_json()["detail"]


def test_kgp_twelve_by_twelve_analysis_over_http(gunicorn_server: str) -> None:
    response = requests.get(f"{gunicorn_server}/v1/analysis?{KGP_12}", timeout=60)
    assert response.status_code == 200, response.text
    check_big_board_estimate(response.json())
