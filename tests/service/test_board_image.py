"""GET /v1/board.svg: the position of the analysis parameters drawn as SVG, cacheable."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from flask.testing import FlaskClient

from kalah_core import Game, Rules

NS = {"svg": "http://www.w3.org/2000/svg"}


def _svg(response: object) -> ET.Element:
    return ET.fromstring(response.data)  # type: ignore[attr-defined]


def test_board_image_is_well_formed_svg_and_cacheable(client: FlaskClient) -> None:
    response = client.get("/v1/board.svg?position=444444-0-444444-0-s&rules=kalah&move=3")
    assert response.status_code == 200
    assert response.mimetype == "image/svg+xml"
    root = _svg(response)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall(".//svg:circle", NS)) == 12
    assert "move 3 marked" in root.get("aria-label", "")
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    tag = response.headers["ETag"]
    again = client.get(
        "/v1/board.svg?position=444444-0-444444-0-s&rules=kalah&move=3",
        headers={"If-None-Match": tag},
    )
    assert again.status_code == 304 and again.headers["ETag"] == tag and not again.data
    other = client.get("/v1/board.svg?position=444444-0-444444-0-s&rules=kalah&move=4")
    assert other.headers["ETag"] != tag


def test_board_image_takes_the_analysis_parameters(client: FlaskClient) -> None:
    root = _svg(client.get("/v1/board.svg?position=start&rules=kalaha&houses=4&flip=true"))
    assert len(root.findall(".//svg:circle", NS)) == 8
    assert "3333-0-3333-0-s" in root.get("aria-label", "")
    assert "seen from North" in ET.tostring(root, encoding="unicode")


def test_board_image_marks_the_swap(client: FlaskClient) -> None:
    game = Game(Rules.preset("kalah-pie"))
    game.push(1)
    position = game.position.compact()
    assert position.endswith("-np")
    response = client.get(f"/v1/board.svg?position={position}&rules=kalah-pie&move=swap")
    assert response.status_code == 200
    assert "move swap" in response.get_data(as_text=True)


def test_board_image_rejects_bad_input_naming_the_field(client: FlaskClient) -> None:
    cases = {
        "position=start&move=7": "move",  # not a house of Kalah(6,4)
        "position=start&move=swap": "move",  # no pie rule
        "position=start&move=zero": "move",
        "position=444444-0-444444-0": "position",
        "position=start&size=10": "size",
        "position=start&houses=13": "houses",
        "position=start&colour=red": "colour",
    }
    for query, field in cases.items():
        response = client.get(f"/v1/board.svg?{query}")
        assert response.status_code in (400, 422), query
        assert response.mimetype == "application/problem+json", query
        assert response.get_json()["field"] == field, query


def test_board_image_is_in_the_spec(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    operation = spec["paths"]["/v1/board.svg"]["get"]
    assert "image/svg+xml" in operation["responses"]["200"]["content"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"position", "rules", "houses", "seeds", "pie", "move", "flip", "size"} <= names
