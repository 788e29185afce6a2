"""Cost-based rate limits, API keys, CORS and the security headers (api/ratelimit.py,
api/edge/keys.py, api/edge/security.py), with the in-process limiter and with a real Redis."""

from __future__ import annotations

import json
import math
import tempfile
import time
from typing import TYPE_CHECKING, Any

import pytest
from flask import Flask, jsonify
from flask.testing import FlaskClient

from kalah_service import create_app
from kalah_service.core.problems import ApiProblem
from kalah_service.edge.callers import require_key
from kalah_service.edge.charging import charge, charge_batch
from kalah_service.ratelimit.costs import ROUTE_COSTS

if TYPE_CHECKING:
    pass

PROBLEM = "application/problem+json"
SMALL = "/v1/analysis?position=start&houses=3&seeds=3"
RULES = "/v1/rules"


def limited_app(anonymous: str = "10/minute", **config: Any) -> Flask:
    """An app with limits on and a limits store of its own: the session's shared one holds
    other tests' charges to the same loopback caller, which a sync (a /readyz probe) reads."""
    return create_app(
        {
            "TESTING": True,
            "KALAH_CACHE_DIR": tempfile.mkdtemp(prefix="kalah-limits-test-"),
            "KALAH_REDIS_URL": "",
            "KALAH_LIMITS": "on",  # these callers are on loopback: limited all the same
            "KALAH_LIMIT_ANONYMOUS": anonymous,
            "KALAH_LIMIT_STANDARD": "50/minute",
            **config,
        }
    )


def test_headers_count_down_and_a_spent_bucket_is_a_429_problem() -> None:
    client = limited_app("3/minute").test_client()
    remaining = []
    for _ in range(3):
        response = client.get(RULES)
        assert response.status_code == 200
        assert response.headers["RateLimit-Limit"] == "3"
        assert response.headers["Kalah-Cost"] == "1"
        assert "Retry-After" not in response.headers
        remaining.append(int(response.headers["RateLimit-Remaining"]))
    assert remaining == [2, 1, 0]
    refused = client.get(RULES)
    assert refused.status_code == 429 and refused.mimetype == PROBLEM
    body = refused.get_json()
    assert body["type"] == "/problems/rate-limited" and body["status"] == 429
    assert "3 per 1 minute" in body["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert int(refused.headers["RateLimit-Reset"]) >= int(time.time())
    assert refused.headers["Kalah-Cost"] == "0"


def test_every_v1_endpoint_shares_one_bucket_and_health_is_free() -> None:
    client = limited_app("100/minute").test_client()
    assert client.get(RULES).headers["RateLimit-Remaining"] == "99"
    assert client.post("/v1/play", json={"moves": [1]}).headers["RateLimit-Remaining"] == "98"
    searched = client.get(SMALL)
    cost = 1 + math.ceil(searched.get_json()["time_ms"] / 100)
    assert searched.headers["Kalah-Cost"] == str(cost)
    assert searched.headers["RateLimit-Remaining"] == str(98 - cost)
    cached = client.get(SMALL)
    assert cached.headers["Kalah-Cost"] == "1"
    assert cached.headers["RateLimit-Remaining"] == str(97 - cost)
    for path in ("/livez", "/readyz", "/openapi.json", "/docs"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "RateLimit-Limit" not in response.headers
    assert client.get(RULES).headers["RateLimit-Remaining"] == str(96 - cost)


def test_a_cached_answer_costs_1_and_a_search_1_per_started_100_ms() -> None:
    client = limited_app("1000/minute").test_client()
    query = "/v1/analysis?position=start&seeds=6&time_ms=350"  # Kalah(6,6): not in 350 ms
    first = client.get(query)
    searched = first.get_json()["time_ms"]
    cost = int(first.headers["Kalah-Cost"])
    assert first.get_json()["cached"] is False
    assert cost >= 1 + 3 and cost <= 2 + int(searched // 100) + 1, (cost, searched)
    again = client.get(query)
    assert again.get_json()["cached"] is True and again.headers["Kalah-Cost"] == "1"
    best = client.get("/v1/best-move?position=start&seeds=6&time_ms=350")
    assert best.headers["Kalah-Cost"] == "1"  # the same cache entry
    assert int(again.headers["RateLimit-Remaining"]) == 1000 - cost - 1


def test_a_search_reserves_its_budget_before_it_runs_and_refunds_the_rest() -> None:
    client = limited_app("10/minute").test_client()
    refused = client.get("/v1/analysis?position=start&seeds=6&time_ms=1000")  # 1 + 10 > 10
    assert refused.status_code == 429 and "may cost 11 units" in refused.get_json()["detail"]
    assert refused.headers["Kalah-Cost"] == "0" and refused.headers["RateLimit-Remaining"] == "10"
    solved = client.get("/v1/analysis?position=start&rules=kalah&houses=3&seeds=2&time_ms=900")
    assert solved.status_code == 200 and solved.get_json()["exact"] is True
    # 9 units reserved and the unspent ones refunded: the search takes a few ms (2 units;
    # more only if a busy machine stalls it), charged by the search's own clock, not ours.
    cost = int(solved.headers["Kalah-Cost"])
    searched = solved.get_json()["time_ms"]
    assert 2 <= cost <= 2 + int(searched // 100) < 10, (cost, searched)
    assert solved.headers["RateLimit-Remaining"] == str(10 - cost)
    first = client.get("/v1/analysis?position=start&seeds=6&time_ms=400")  # not in 400 ms
    assert first.status_code == 200 and first.headers["Kalah-Cost"] == "5", "never above budget"
    assert first.headers["RateLimit-Remaining"] == str(10 - cost - 5)
    assert client.get("/v1/analysis?position=start&seeds=6&time_ms=300").status_code == 429


def test_clients_are_limited_separately_by_ip() -> None:
    client = limited_app("2/minute").test_client()
    a = {"REMOTE_ADDR": "192.0.2.1"}
    b = {"REMOTE_ADDR": "192.0.2.2"}
    for _ in range(2):
        assert client.get(RULES, environ_base=a).status_code == 200
    assert client.get(RULES, environ_base=a).status_code == 429
    assert client.get(RULES, environ_base=b).status_code == 200


def test_trusted_proxy_gives_the_forwarded_client_ip() -> None:
    client = limited_app("1/minute", KALAH_TRUSTED_PROXIES=1).test_client()
    for address in ("198.51.100.1", "198.51.100.2"):
        response = client.get(RULES, headers={"X-Forwarded-For": address})
        assert response.status_code == 200
    assert client.get(RULES, headers={"X-Forwarded-For": "198.51.100.1"}).status_code == 429
    # Without a trusted proxy the header is ignored: one bucket for the peer address.
    direct = limited_app("1/minute").test_client()
    assert direct.get(RULES, headers={"X-Forwarded-For": "1.1.1.1"}).status_code == 200
    assert direct.get(RULES, headers={"X-Forwarded-For": "2.2.2.2"}).status_code == 429


def test_a_key_gets_its_tier_and_its_own_bucket() -> None:
    app = limited_app("1/minute")
    client = app.test_client()
    key, info = app.extensions["kalah_auth"].store.create("standard")
    assert key.startswith(f"kalah_{info.id}_") and len(key) > 40
    auth = {"Authorization": f"Bearer {key}"}
    assert client.get(RULES).status_code == 200
    assert client.get(RULES).status_code == 429  # the anonymous bucket of this IP is spent
    response = client.get(RULES, headers=auth)
    assert response.status_code == 200 and response.headers["RateLimit-Limit"] == "50"


@pytest.mark.parametrize(
    "header",
    ["Bearer nope", "Bearer ", "Basic dXNlcjpwYXNz", "kalah_x", "Bearer " + "k" * 300],
)
def test_a_bad_key_is_a_401_problem(header: str) -> None:
    client = limited_app().test_client()
    response = client.get(RULES, headers={"Authorization": header})
    assert response.status_code == 401 and response.mimetype == PROBLEM
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    body = response.get_json()
    assert body["type"] == "/problems/unauthorized" and body["field"] == "Authorization"
    # Charged to the client's IP like any request, so guessing keys is rate limited.
    assert response.headers["Kalah-Cost"] == "1"
    assert response.headers["RateLimit-Remaining"] == "9"


def test_a_revoked_key_is_refused() -> None:
    app = limited_app()
    store = app.extensions["kalah_auth"].store
    key, info = store.create("premium")
    assert store.revoke(info.id) and not store.revoke(info.id)
    response = app.test_client().get(RULES, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 401


def test_require_key_and_an_upfront_charge_for_batch_like_routes() -> None:
    """The hook a batch endpoint uses: ``require_key()`` then ``charge(n, upfront=True)``."""
    app = limited_app()

    @app.post("/v1/test-batch")
    def batch() -> Any:
        from flask import request

        require_key()
        charge(len(request.get_json()["items"]), upfront=True)
        return jsonify(ok=True)

    client = app.test_client()
    anonymous = client.post("/v1/test-batch", json={"items": [1]})
    assert anonymous.status_code == 401 and anonymous.get_json()["type"] == "/problems/key-required"
    key, _ = app.extensions["kalah_auth"].store.create("standard")
    auth = {"Authorization": f"Bearer {key}"}
    ok = client.post("/v1/test-batch", json={"items": list(range(20))}, headers=auth)
    assert ok.status_code == 200 and ok.headers["Kalah-Cost"] == "21"
    too_big = client.post("/v1/test-batch", json={"items": list(range(40))}, headers=auth)
    assert too_big.status_code == 429 and int(too_big.headers["Retry-After"]) >= 1
    assert "41 units" in too_big.get_json()["detail"]
    assert client.post("/v1/test-batch", json={"items": [1]}, headers=auth).status_code == 200


def test_charge_batch_needs_a_key_pays_its_items_and_needs_room_for_its_first_chunk() -> None:
    app = limited_app()  # standard keys: 50 units a minute

    @app.post("/v1/test-jobs")
    def jobs() -> Any:
        from flask import request

        body = request.get_json()
        charge_batch(len(body["items"]), body["first"])
        return jsonify(queued=len(body["items"]))

    client = app.test_client()
    job = {"items": list(range(150)), "first": 10}  # 2 units (per 100 items), + 1
    assert client.post("/v1/test-jobs", json=job).get_json()["type"] == "/problems/key-required"
    key, _ = app.extensions["kalah_auth"].store.create("standard")
    auth = {"Authorization": f"Bearer {key}"}
    queued = client.post("/v1/test-jobs", json=job, headers=auth)
    assert queued.status_code == 200 and queued.headers["Kalah-Cost"] == "3"
    assert queued.headers["RateLimit-Remaining"] == "47", "the first chunk is not charged"
    big = client.post("/v1/test-jobs", json={"items": [1], "first": 46}, headers=auth)
    assert big.status_code == 429  # room for 2 + 46 units needed, 47 left
    assert big.headers["Kalah-Cost"] == "0"


def test_route_costs_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "kalah_service.ratelimit.costs.ROUTE_COSTS", {**ROUTE_COSTS, "rules.RulesView": 5}
    )
    client = limited_app("7/minute").test_client()
    assert client.get(RULES).headers["Kalah-Cost"] == "5"
    assert client.get(RULES).status_code == 429  # 2 left, base cost 5


def test_rules_publishes_the_tiers_and_the_search_unit() -> None:
    published = limited_app("7/minute").test_client().get(RULES).get_json()["rate_limits"]
    assert published == {
        "tiers": {"anonymous": "7/minute", "standard": "50/minute", "premium": "12000/minute"},
        "search_unit_ms": 100,
        "mode": "on",
        "applies": True,
    }


@pytest.mark.parametrize("value", ["lots", "5/fortnight", ""])
def test_bad_limit_setting_names_the_variable(value: str) -> None:
    if value == "":
        assert limited_app(value)  # empty: the default
        return
    with pytest.raises(ValueError, match="KALAH_LIMIT_ANONYMOUS"):
        limited_app(value)


# ----------------------------------------------------------------------------- with Redis


def test_an_unreachable_key_store_is_skipped_for_a_moment() -> None:
    from kalah_service.stores.keys import KeyInfo, KeyStore, KeyStoreUnavailable

    class Down(KeyStore):
        calls = 0

        def lookup(self, key_digest: str) -> KeyInfo | None:
            Down.calls += 1
            raise KeyStoreUnavailable("down")

    app = limited_app("100/minute")
    auth = app.extensions["kalah_auth"]
    auth.store = Down()
    # The back-off runs on the authenticator's clock: held still here, moved on below, so
    # the test never races a loaded machine's wall clock (it once failed at load 4).
    now = [1000.0]
    auth.clock = lambda: now[0]
    client = app.test_client()
    for _ in range(5):
        response = client.get(RULES, headers={"Authorization": "Bearer kalah_x_y"})
        assert response.status_code == 200  # served as anonymous
    assert Down.calls == 1
    now[0] += auth.BACKOFF_S / 2  # still within the back-off
    client.get(RULES, headers={"Authorization": "Bearer kalah_x_y"})
    assert Down.calls == 1
    now[0] += auth.BACKOFF_S  # past it: tried again
    client.get(RULES, headers={"Authorization": "Bearer kalah_x_y"})
    assert Down.calls == 2


# ----------------------------------------------------------------------------- browsers


@pytest.fixture
def client() -> FlaskClient:
    return limited_app("1000/minute").test_client()


@pytest.mark.parametrize("path", ["/v1/analysis", "/v1/best-move", "/v1/rules", "/v1/play"])
def test_cors_preflight_on_public_endpoints(client: FlaskClient, path: str) -> None:
    response = client.options(
        path,
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "Authorization, If-None-Match",
        },
    )
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] in ("*", "https://app.example")
    allowed = response.headers["Access-Control-Allow-Headers"].lower()
    assert "authorization" in allowed and "if-none-match" in allowed
    assert "RateLimit-Limit" not in response.headers  # preflights are free


def test_cors_exposes_etag_and_limit_headers(client: FlaskClient) -> None:
    response = client.get(SMALL, headers={"Origin": "https://app.example"})
    assert response.headers["Access-Control-Allow-Origin"] in ("*", "https://app.example")
    exposed = {
        h.strip().lower() for h in response.headers["Access-Control-Expose-Headers"].split(",")
    }
    assert {
        "etag",
        "retry-after",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
    } <= exposed
    assert (
        "Access-Control-Allow-Origin"
        not in client.get("/metrics", headers={"Origin": "https://app.example"}).headers
    )


def test_cors_origins_setting() -> None:
    client = limited_app(KALAH_CORS_ORIGINS="https://a.example").test_client()
    good = client.get(RULES, headers={"Origin": "https://a.example"})
    assert good.headers["Access-Control-Allow-Origin"] == "https://a.example"
    bad = client.get(RULES, headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in bad.headers


@pytest.mark.parametrize("path", ["/v1/rules", SMALL, "/livez", "/openapi.json", "/nowhere"])
def test_security_headers(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["X-Frame-Options"] == "DENY"
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_the_board_and_the_docs_load_from_this_service_only(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    csp = response.headers["Content-Security-Policy"]
    assert "http" not in csp and "frame-ancestors 'none'" in csp
    assert "script-src 'self';" in csp and "default-src 'none'" in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_spec_documents_keys_limits_and_costs(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    assert spec["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    assert "Rate limits" in spec["info"]["description"]
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if method == "parameters":
                continue
            if path.startswith("/v1/"):
                assert {"401", "429"} <= set(operation["responses"]), path
                assert "Retry-After" in operation["responses"]["429"]["headers"]
            else:
                assert "429" not in operation["responses"], path


# ----------------------------------------------------------------------------- KALAH_LIMITS


def limits_app(mode: str | None, **config: Any) -> Flask:
    settings = {"TESTING": True, "KALAH_REDIS_URL": "", "KALAH_LIMIT_ANONYMOUS": "2/minute"}
    if mode is not None:
        settings["KALAH_LIMITS"] = mode
    return create_app({**settings, **config})


def limited(client: FlaskClient, **kwargs: Any) -> bool:
    """Whether the caller is limited: its answers carry the headers, the third is a 429, and
    GET /v1/rules says the limits apply."""
    answers = [client.get(RULES, **kwargs) for _ in range(3)]
    applies = bool(answers[0].get_json()["rate_limits"]["applies"])
    headers = "RateLimit-Limit" in answers[0].headers
    refused = answers[2].status_code == 429
    assert applies == headers == refused, (applies, headers, refused)
    return applies


def test_limits_auto_spare_loopback_callers_of_an_embedded_server() -> None:
    app = limits_app(None)  # the default: auto
    assert app.test_client().get(RULES).get_json()["rate_limits"]["mode"] == "auto"
    assert not limited(app.test_client())  # the test client's address is 127.0.0.1
    assert not limited(app.test_client(), environ_base={"REMOTE_ADDR": "::1"})
    assert limited(app.test_client(), environ_base={"REMOTE_ADDR": "192.0.2.7"})
    # Through a reverse proxy on the same machine: the forwarded caller is limited.
    assert limited(app.test_client(), headers={"X-Forwarded-For": "198.51.100.4"})


def test_limits_on_and_off() -> None:
    assert limited(limits_app("on").test_client())
    assert not limited(limits_app("off").test_client(), environ_base={"REMOTE_ADDR": "192.0.2.7"})


def test_a_bad_key_is_refused_whether_or_not_limits_apply() -> None:
    client = limits_app("off").test_client()
    answer = client.get(RULES, headers={"Authorization": "Bearer nope"})
    assert answer.status_code == 401 and "RateLimit-Limit" not in answer.headers


def test_bad_limits_mode_names_the_variable() -> None:
    with pytest.raises(ValueError, match="KALAH_LIMITS"):
        limits_app("sometimes")


def test_a_large_body_is_charged_before_it_is_read_and_kept_when_refused() -> None:
    """The test-client path of issue 33's finding 1 (tests/system/test_api_limits_http.py has
    the attack against gunicorn): a batch body the bucket cannot pay for is refused without
    being read; one it can is charged, even when the batch itself is then refused."""
    from kalah_service.ratelimit.costs import body_cost

    client = limited_app("60/minute").test_client()
    items = [{"position": "444444-0-444444-0-s"}] * 3000
    # A job of 30 units (per 100 items) whose first chunk's budget (50 units) does not fit.
    body = json.dumps({"positions": items, "limits": {"time_ms": 5000}}).encode()
    units = body_cost(len(body))
    assert 0 < units < 59
    post = {"data": body, "content_type": "application/json"}
    refused = client.post("/v1/batch", **post)
    assert refused.status_code == 429, refused.get_json()
    assert refused.headers["Kalah-Cost"] == str(units), "the body was parsed: it is paid"
    # A 429's headers give what the refusal was decided on, as its detail does.
    left = int(refused.headers["RateLimit-Remaining"])
    assert f"only {left} of 60 are left" in refused.get_json()["detail"]
    assert client.get(RULES).headers["RateLimit-Remaining"] == str(60 - units - 1)
    while int(client.get(RULES).headers["RateLimit-Remaining"]) > units:
        pass
    unread = client.post("/v1/batch", **post)
    assert unread.status_code == 429 and unread.headers["Kalah-Cost"] == "0"
    assert f"may cost {1 + units} units" in unread.get_json()["detail"]


def test_a_request_the_service_fails_is_charged_nothing() -> None:
    """Issue 33, finding 4: a job refused with a 503 (a full state store) was still charged
    its 81 units. Whatever a request reserved is refunded when the service fails it."""
    app = limited_app("100/minute")

    @app.post("/v1/test-failing-job")
    def failing_job() -> Any:
        charge_batch(80, 0, need_key=False)
        raise ApiProblem("not-ready", "the job queue is not reachable; try again later")

    client = app.test_client()
    failed = client.post("/v1/test-failing-job")
    assert failed.status_code == 503 and failed.headers["Kalah-Cost"] == "0"
    assert client.get(RULES).headers["RateLimit-Remaining"] == "99"
