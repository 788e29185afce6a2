"""The answer object (kalah_service.core.reply): ``cached`` is a field, the body is written in one
place with the flag first, and the entity tag digests the content without the flag."""

from __future__ import annotations

import json

from flask.testing import FlaskClient

from kalah_service.core.reply import Answer, as_cached, dumps

CONTENT = {"position": "s", "perspective": "side_to_move", "value": 3, "exact": True}
FULL = {**CONTENT, "best_moves": [2, 5], "lower": 3, "upper": 3}


def test_the_body_carries_cached_first_and_the_tag_ignores_it() -> None:
    fresh = Answer(dumps(CONTENT), exact=True, cached=False)
    cached = fresh.as_cached()
    assert json.loads(fresh.body()) == {"cached": False, **CONTENT}
    assert list(json.loads(cached.body())) == ["cached", *CONTENT]
    assert json.loads(cached.body())["cached"] is True
    assert fresh.etag == cached.etag and fresh.etag.startswith('"')
    assert Answer(dumps({**CONTENT, "value": 4}), True).etag != fresh.etag


def test_best_move_is_an_answer_of_the_same_kind() -> None:
    full = Answer(dumps(FULL), exact=True, cached=True)
    best = full.best_move()
    assert best.json() == {
        "cached": True,
        "position": "s",
        "perspective": "side_to_move",
        "best_move": 2,
        "best_moves": [2, 5],
        "value": 3,
        "exact": True,
        "lower": 3,
        "upper": 3,
    }
    assert best.etag == Answer(best.content, True, cached=False).etag != full.etag


def test_a_repeat_in_a_batch_is_reported_cached_and_a_problem_is_left_alone() -> None:
    body = Answer(dumps(CONTENT), True).body()
    assert json.loads(as_cached(body)) == {"cached": True, **CONTENT}
    problem = dumps({"type": "/problems/invalid-position", "detail": "no 'cached' here"})
    assert as_cached(problem) == problem


def test_a_revalidated_first_answer_is_a_304_from_the_cache(client: FlaskClient) -> None:
    query = "/v1/analysis?position=start&houses=3&seeds=3"
    first = client.get(query)
    assert first.get_json()["cached"] is False
    again = client.get(query, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.headers["ETag"] == first.headers["ETag"]
    best = client.get(query.replace("analysis", "best-move"))
    assert best.get_json()["cached"] is True and best.headers["ETag"] != first.headers["ETag"]
