"""``/v1/play``, ``/v1/rules``, ``/livez``, ``/readyz`` and ``/metrics`` (in-process)."""

from __future__ import annotations

from flask.testing import FlaskClient

from kalah_core import PRESETS
from kalah_core.rules import OPTION_DOCS


def test_play_moves_from_the_start(client: FlaskClient) -> None:
    answer = client.post("/v1/play", json={"moves": [3, 1]}).get_json()
    assert answer["start"] == "444444-0-444444-0-s"
    assert [s["move"] for s in answer["steps"]] == [3, 1]
    assert answer["steps"][0] == {
        "move": 3,
        "mover": "south",
        "extra_turn": True,
        "captured": 0,
        "over": False,
        "position": "440555-1-444444-0-s",
        "board": {
            "south": [4, 4, 0, 5, 5, 5],
            "north": [4] * 6,
            "stores": [1, 0],
            "to_move": "south",
            "swap_available": False,
        },
    }
    assert answer["position"] == answer["steps"][-1]["position"] == "051665-1-444444-0-n"
    assert answer["status"] == {
        "over": False,
        "to_move": "north",
        "legal_moves": [1, 2, 3, 4, 5, 6],
        "score": None,
        "winner": None,
    }
    assert answer["game"] == "31-"


def test_play_the_seed_000_example_game(client: FlaskClient) -> None:
    """docs/rules.md: the Finnish article's example game ends South 12, North 24."""
    game = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
    answer = client.post("/v1/play", json={"rules": "kalaha", "game": game}).get_json()
    assert answer["status"]["over"] is True
    assert answer["status"]["score"] == {"south": 12, "north": 24}
    assert answer["status"]["winner"] == "north"
    assert answer["status"]["legal_moves"] == []
    assert answer["steps"][-1]["over"] is True


def test_play_the_first_test_vector(client: FlaskClient) -> None:
    answer = client.post(
        "/v1/play", json={"rules": "kalaha", "game": "(1-2, 5-31, 2-5, 3-2, 2*-1*)"}
    ).get_json()
    assert answer["board"] == {
        "south": [1, 0, 0, 7, 0, 6],
        "north": [0, 0, 2, 0, 0, 5],
        "stores": [10, 5],
        "to_move": "south",
        "swap_available": False,
    }
    assert answer["game"] == "1-2, 5-31, 2-5, 3-2, 2*-1*"


def test_play_swap_and_from_a_position(client: FlaskClient) -> None:
    answer = client.post("/v1/play", json={"rules": "kalah-pie", "moves": [1, "swap"]}).get_json()
    assert answer["start"] == "444444-0-444444-0-sp"
    assert answer["steps"][1]["move"] == "swap"
    assert answer["steps"][1]["mover"] == "north"
    no_moves = client.post(
        "/v1/play", json={"position": {"south": [0, 1], "north": [1, 0]}, "rules": {"houses": 2}}
    ).get_json()
    assert no_moves["steps"] == [] and no_moves["start"] == "01-0-10-0-s"


def test_play_draw(client: FlaskClient) -> None:
    answer = client.post(
        "/v1/play", json={"position": "1-0-1-0-s", "rules": {"houses": 1}, "moves": [1]}
    ).get_json()
    assert answer["status"]["over"] is True
    assert answer["status"]["winner"] == "draw"


def test_rules(client: FlaskClient) -> None:
    answer = client.get("/v1/rules").get_json()
    assert answer["default_preset"] == "kalah"
    assert [p["name"] for p in answer["presets"]] == list(PRESETS)
    assert all(p["description"] for p in answer["presets"])
    assert answer["presets"][0]["rules"] == PRESETS["kalah"].to_json()
    assert [o["name"] for o in answer["options"]] == list(OPTION_DOCS)
    types = {o["name"]: o["type"] for o in answer["options"]}
    assert types == {
        "houses": "integer",
        "seeds": "integer",
        "capture": "string",
        "end": "string",
        "remaining": "string",
        "majority": "boolean",
        "pie": "boolean",
    }
    assert answer["limits"]["max_time_ms"] == 5000
    assert answer["limits"]["default_time_ms"] == 1000
    assert answer["limits"]["max_body_bytes"] == 65536
    assert answer["limits"]["batch_max_positions"] == 10000
    assert answer["limits"]["batch_inline_max"] == 16
    assert answer["limits"]["batch_max_body_bytes"] == 4 * 1024 * 1024
    assert answer["limits"]["batch_jobs"] is True  # run by the server itself without Redis
    assert answer["limits"]["batch_jobs_need_key"] is False


def test_livez(client: FlaskClient) -> None:
    response = client.get("/livez")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}


def test_readyz_on_the_embedded_default(client: FlaskClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    answer = response.get_json()
    assert answer["status"] == "ready" and answer["backend"] == "embedded"
    assert answer["checks"]["engine"]["ok"] is True
    assert answer["checks"]["cache"]["ok"] is True
    assert answer["checks"]["jobs"]["ok"] is True  # run by the server's own processes


def test_metrics(client: FlaskClient) -> None:
    client.get("/v1/analysis?position=start&houses=2&seeds=2")
    client.get("/v1/analysis?position=start&houses=2&seeds=2")
    client.get("/v1/analysis?position=nope")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    for name in (
        'kalah_http_requests_total{endpoint="/v1/analysis",method="GET",status="200"}',
        'kalah_http_requests_total{endpoint="/v1/analysis",method="GET",status="422"}',
        "kalah_http_request_duration_seconds_bucket",
        'kalah_cache_lookups_total{level="memory",result="hit"}',
        'kalah_cache_lookups_total{level="embedded",result="miss"}',
        "kalah_search_nodes_total",
        'kalah_search_duration_seconds_count{kind="exact"}',
        'kalah_analysis_answers_total{cached="true",kind="exact"}',
    ):
        assert name in text, name
