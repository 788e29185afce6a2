"""The analysis board at ``/`` in headless Chromium: the values it shows are the API's, a click
plays the move, undo and back work, the Finnish-notation review shows every sowing's loss, the rules
picker changes the game; screenshots at phone and desktop width."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from flask import Flask

from kalah_service import create_app

from .board_page import shown_values

MID_GAME = "109101-10-231350-12-n"
"""A Kalah(6,4) mid-game position from a random game, North to move, solved in some 30 ms:
five moves that win, draw and lose."""
SEED_000 = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
SEED_000_URL = "/?game=45-46,%201*-5,%202-,%20-63*,%206-,%20-561646562,%204-3,%20656-&rules=kalaha"


@pytest.fixture(scope="module")
def oracle() -> Flask:
    """An app of its own (own cache, own engine): the answers the page must show."""
    return create_app({"TESTING": True, "KALAH_REDIS_URL": ""})


def api_values(oracle: Flask, position: str, rules: Any = "kalah") -> dict[str, tuple[int, bool]]:
    body = {"position": position, "rules": rules, "limits": {"time_ms": 5000}}
    answer = oracle.test_client().post("/v1/analysis", json=body)
    assert answer.status_code == 200
    return {str(m["move"]): (m["value"], m["exact"]) for m in answer.get_json()["moves"]}


def query_of(page: Any) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def test_the_values_shown_are_the_apis(page: Any, oracle: Flask, base_url: str) -> None:
    # Solved in the server's cache first, so a busy machine cannot turn the page's answer
    # into an estimate; the oracle solves it again on its own.
    warm = requests.get(f"{base_url}/v1/analysis?position={MID_GAME}&time_ms=5000", timeout=30)
    assert warm.json()["exact"]
    page.goto(f"/?position={MID_GAME}&rules=kalah")
    expected = api_values(oracle, MID_GAME)
    assert all(exact for _, exact in expected.values())  # the position is solved
    assert shown_values(page) == expected
    assert "North to move" in page.inner_text("#to-move")
    best = page.query_selector_all("[data-move].best")
    top = max(v for v, _ in expected.values())
    assert {b.get_attribute("data-move") for b in best} == {
        m for m, (v, _) in expected.items() if v == top
    }


def test_estimates_are_marked_as_such(page: Any) -> None:
    # Kalah(6,6) from the start is not solved in 300 ms: every move is an estimate with bounds.
    page.goto("/?position=start&rules=kalah&seeds=6")
    page.wait_for_selector("[data-move]")
    for element in page.query_selector_all("[data-move]"):
        assert element.get_attribute("data-exact") == "false"
        assert element.inner_text().count("\u2248") == 1  # "≈" before the value
        assert "proven" in element.inner_text()  # and its proven bounds
    assert "depth" in page.inner_text("#search-info")


def test_a_click_plays_the_move_then_undo_redo_and_back(page: Any, oracle: Flask) -> None:
    page.goto("/?position=start&rules=kalah&houses=4&seeds=3")
    start_values = shown_values(page)
    answer = (
        oracle.test_client()
        .get("/v1/analysis?position=start&rules=kalah&houses=4&seeds=3")
        .get_json()
    )
    move = next(m for m in answer["moves"] if not m["extra_turn"])
    page.click(f"[data-move='{move['move']}']")
    page.wait_for_function(f"() => location.search.includes('{move['position']}')")
    assert query_of(page) == {
        "position": move["position"],
        "rules": "kalah",
        "houses": "4",
        "seeds": "3",
    }
    page.wait_for_selector("text=North to move")
    rules = {"preset": "kalah", "houses": 4, "seeds": 3}
    assert shown_values(page) == api_values(oracle, move["position"], rules)
    after = move["position"].split("-")
    north_counts = [int(c) for c in after[2]]
    drawn = [int(page.text_content(f"[data-house='north-{h}'] text")) for h in range(1, 5)]
    assert drawn == north_counts
    assert page.inner_text("#record").strip().startswith("1.")

    page.click("#undo")
    page.wait_for_function("() => new URLSearchParams(location.search).get('position') === 'start'")
    assert shown_values(page) == start_values
    page.keyboard.press("ArrowRight")  # redo
    page.wait_for_function(f"() => location.search.includes('{move['position']}')")
    page.go_back()
    page.wait_for_function("() => new URLSearchParams(location.search).get('position') === 'start'")
    assert shown_values(page) == start_values


def test_keyboard_plays_a_house_with_visible_focus(page: Any) -> None:
    page.goto("/?position=start&rules=kalah&houses=3&seeds=3")
    shown_values(page)
    page.keyboard.press("Tab")
    page.keyboard.press("2")
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('position') === '304-1-433-0-n'"
    )
    page.wait_for_selector("[data-house='north-1'][role=button]")
    page.focus("[data-house='north-1']")
    shown_values(page)  # the redraw with the values keeps the focus where it was
    assert page.evaluate("() => document.activeElement.dataset.house") == "north-1"
    outline = page.eval_on_selector(
        "[data-house='north-1'] circle", "c => getComputedStyle(c).strokeWidth"
    )
    assert outline == "5px"  # the focus ring of a house


def test_the_seed_000_review_shows_every_sowing_and_its_loss(page: Any, oracle: Flask) -> None:
    page.goto(SEED_000_URL)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-loss]').length === 24", timeout=60_000
    )
    review = oracle.test_client().post(
        "/v1/games/analysis", json={"rules": "kalaha", "game": SEED_000}
    )
    losses = [m["loss"] for m in review.get_json()["moves"]]
    shown = [int(e.get_attribute("data-loss")) for e in page.query_selector_all("[data-loss]")]
    assert shown == losses
    assert page.query_selector_all("#chart [data-sowing]").__len__() == 24
    assert "blunder" in page.inner_text("#summary")
    assert page.inner_text("#game-text") == review.get_json()["annotated"]
    # Click the South blunder: its position and its alternatives, the played move marked.
    blunder = next(
        i for i, m in enumerate(review.get_json()["moves"]) if m["judgement"] == "blunder"
    )
    page.click(f"#record [data-index='{blunder}']")
    page.wait_for_function(f"() => location.hash === '#{blunder}'")
    entry = review.get_json()["moves"][blunder]
    values = shown_values(page)
    assert values == api_values(oracle, entry["position"], "kalaha")
    played = page.query_selector("[data-move].played")
    assert played is not None and played.get_attribute("data-move") == str(entry["move"])
    assert int(played.get_attribute("data-value")) == entry["value_after"]


def test_the_rules_picker_changes_the_game(page: Any, oracle: Flask) -> None:
    page.goto("/")
    shown_values(page)
    page.click("#rules-panel summary")
    page.select_option("#rule-preset", "kalaha")
    page.wait_for_function("() => new URLSearchParams(location.search).get('rules') === 'kalaha'")
    page.fill("#rule-houses", "4")
    page.dispatch_event("#rule-houses", "change")
    page.wait_for_function("() => new URLSearchParams(location.search).get('houses') === '4'")
    assert query_of(page) == {"position": "start", "rules": "kalaha", "houses": "4"}
    assert len(page.query_selector_all("[data-house^='south-']")) == 4
    assert page.text_content("[data-house='south-1'] text") == "3"
    assert shown_values(page) == api_values(oracle, "start", {"preset": "kalaha", "houses": 4})


def test_an_answer_arriving_while_someone_types_keeps_what_they_typed(page: Any) -> None:
    # The analysis of the new rules' start is held back until a house count is typed: its
    # render must not put the preset's count back into the field.
    page.goto("/")
    shown_values(page)
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)

    page.route("**/v1/analysis?*rules=kalaha*", hold)
    page.click("#rules-panel summary")
    page.select_option("#rule-preset", "kalaha")
    while not held:
        page.wait_for_timeout(20)
    assert page.text_content("#search-info") == ""
    page.fill("#rule-houses", "4")
    for route in held:
        route.continue_()
    page.wait_for_function("() => document.getElementById('search-info').textContent !== ''")
    assert page.input_value("#rule-houses") == "4"
    page.unroute("**/v1/analysis?*rules=kalaha*")
    page.dispatch_event("#rule-houses", "change")
    page.wait_for_function("() => new URLSearchParams(location.search).get('houses') === '4'")
    assert len(page.query_selector_all("[data-house^='south-']")) == 4


def test_a_pasted_position_and_the_editor_open_it(page: Any) -> None:
    page.goto("/?position=start&rules=kalah&houses=3&seeds=3")
    shown_values(page)
    page.fill("#paste-text", '{"south": [0, 2, 1], "north": [1, 1, 0], "stores": [5, 8]}')
    page.click("#paste button[type=submit]")
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('position') === '021-5-110-8-s'"
    )
    shown_values(page)
    page.click("#editor-panel summary")
    page.fill("input[name='south-0']", "3")
    page.click("#editor button[type=submit]")
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('position') === '321-5-110-8-s'"
    )
    assert set(shown_values(page)) == {"1", "2", "3"}


def test_screenshots_at_phone_and_desktop_width(
    browser: Any, base_url: str, artifacts: Path
) -> None:
    for width, height in ((390, 844), (1280, 900)):
        context = browser.new_context(
            viewport={"width": width, "height": height}, base_url=base_url
        )
        page = context.new_page()
        page.goto(SEED_000_URL + "#9")
        page.wait_for_function(
            "() => document.querySelectorAll('[data-loss]').length === 24", timeout=60_000
        )
        page.wait_for_selector("[data-move]")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is wider than {width} px"
        page.screenshot(path=str(artifacts / f"board-{width}.png"), full_page=True)
        context.close()
    assert (artifacts / "board-390.png").stat().st_size > 10_000


def test_the_page_loads_nothing_from_other_hosts_and_stays_small(
    browser: Any, base_url: str
) -> None:
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    sizes: dict[str, int] = {}
    page.on("response", lambda r: sizes.__setitem__(r.url, len(r.body()) if r.ok else 0))
    response = page.goto(f"/?position={MID_GAME}&rules=kalah")
    page.wait_for_selector("[data-move]")
    page.wait_for_load_state("networkidle")
    csp = response.headers["content-security-policy"]
    assert "http" not in csp and "default-src 'none'" in csp and "script-src 'self'" in csp
    assert sizes and all(url.startswith(base_url + "/") for url in sizes), sorted(sizes)
    assert sum(sizes.values()) < 150_000, sizes
    context.close()


def test_docs_work_offline(page: Any, base_url: str) -> None:
    html = requests.get(base_url + "/docs", timeout=10).text
    assert "http://" not in html and "https://" not in html and "//" not in html.replace("<!--", "")
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
    assert "Kalah analysis API" in page.inner_text(".swagger-ui .info .title")
    assert page.query_selector("#operations-board-get_v1_board_svg, [id*='board']") is not None
    assert all(url.startswith(base_url + "/") for url in page.log.requests)


def test_board_image_renders(page: Any, base_url: str, artifacts: Path) -> None:
    response = page.goto(f"/v1/board.svg?position={MID_GAME}&rules=kalah&move=4")
    assert response.headers["content-type"] == "image/svg+xml; charset=utf-8"
    page.set_viewport_size({"width": 560, "height": 250})
    page.screenshot(path=str(artifacts / "board-image.png"))
    box = page.query_selector("svg").bounding_box()
    assert box["width"] > 500


def test_the_pie_swap_is_shown_and_played_from_the_board(page: Any, oracle: Flask) -> None:
    rules = {"preset": "kalah-pie", "houses": 3, "seeds": 2}
    page.goto("/?position=start&rules=kalah-pie&houses=3&seeds=2")
    shown_values(page)
    page.click("[data-move='1']")
    page.wait_for_selector("text=North may swap")
    after = query_of(page)["position"]
    assert after.endswith("-np")
    values = shown_values(page)
    assert values == api_values(oracle, after, rules) and "swap" in values
    page.click("#board .swap")  # the swap's own button on the board
    page.wait_for_function(f"() => !location.search.includes('{after}')")
    swapped = query_of(page)["position"]
    answer = oracle.test_client().post(
        "/v1/play", json={"rules": rules, "position": after, "moves": ["swap"]}
    )
    assert swapped == answer.get_json()["position"]
    assert "swap" in page.inner_text("#record")


def test_a_late_prefetch_answers_only_the_first_position(page: Any, oracle: Flask) -> None:
    # prefetch.js loads async: held back until the page has asked for the first position itself,
    # its answer (the start's) must not be taken for the position after the first move (it once
    # was, and the start's values were shown under the new board).
    rules = {"preset": "kalah-pie", "houses": 3, "seeds": 2}
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)

    page.route("**/js/prefetch.js", hold)
    page.goto("/?position=start&rules=kalah-pie&houses=3&seeds=2", wait_until="commit")
    shown_values(page)
    assert len(held) == 1
    held[0].continue_()
    page.wait_for_function("() => globalThis.kalahPrefetch !== undefined")
    page.click("[data-move='1']")
    page.wait_for_selector("text=North may swap")
    after = query_of(page)["position"]
    page.wait_for_selector("[data-move='swap']")
    assert shown_values(page) == api_values(oracle, after, rules)


def test_a_bad_position_in_the_url_is_named_not_a_blank_page(browser: Any, base_url: str) -> None:
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    page.goto("/?position=444444-0-444444-0&rules=kalah")
    page.wait_for_selector("#message:not([hidden])")
    assert "compact position" in page.inner_text("#message")
    assert page.query_selector("[data-move]") is None
    page.fill("#paste-text", "start")  # and the page still works
    page.click("#paste button[type=submit]")
    page.wait_for_selector("[data-move]")
    assert page.is_hidden("#message")
    context.close()


def test_the_line_is_written_as_the_api_writes_it(page: Any, oracle: Flask) -> None:
    rules = {"preset": "kalah", "houses": 3, "seeds": 3}
    page.goto("/?position=start&rules=kalah&houses=3&seeds=3")
    played: list[Any] = []
    for _ in range(8):  # the best move each time: extra turns, captures, both sides
        shown_values(page)
        before = page.url
        move = page.get_attribute("[data-move].best", "data-move")
        if move is None:
            break
        page.click(f"[data-move='{move}']")
        page.wait_for_function(f"() => location.href !== {before!r}")
        played.append(move if move == "swap" else int(move))
    answer = oracle.test_client().post("/v1/play", json={"rules": rules, "moves": played})
    assert page.inner_text("#game-text") == answer.get_json()["game"]
    assert len(page.query_selector_all("#record .sowing")) == len(played)


def test_flip_shows_the_board_from_north_and_is_remembered(page: Any) -> None:
    page.goto("/?position=start&rules=kalah&houses=3&seeds=3")
    shown_values(page)

    def row_of(house: str) -> float:
        return float(page.get_attribute(f"[data-house='{house}'] circle", "cy"))

    assert row_of("south-1") > row_of("north-1")  # South at the bottom
    page.click("#flip")
    assert page.get_attribute("#flip", "aria-pressed") == "true"
    assert row_of("north-1") > row_of("south-1")
    page.reload()
    shown_values(page)
    assert row_of("north-1") > row_of("south-1")


SMALL_TEXT = """() => {
  // Every visible text on the page, its size on screen: an SVG text's font size times the
  // scale its drawing is shown at.
  const small = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length || el.closest("[hidden], noscript, title")) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.display === "none") continue;
    let px = parseFloat(style.fontSize);
    if (el instanceof SVGElement) px *= el.getScreenCTM().a;
    const text = el.textContent.trim().slice(0, 20);
    if (px < 11.95) small.push(`${el.tagName} '${text}' ${px.toFixed(1)}px`);
  }
  return small;
}"""


@pytest.mark.parametrize("width", [390, 1280])
def test_text_is_at_least_12px_and_the_panels_have_disclosure_arrows(
    browser: Any, base_url: str, width: int
) -> None:
    """Labels, counts, chips and the review chart included, on a phone as on a desktop."""
    context = browser.new_context(viewport={"width": width, "height": 844}, base_url=base_url)
    page = context.new_page()
    page.goto(SEED_000_URL + "#9")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-loss]').length === 24", timeout=60_000
    )
    page.wait_for_selector("[data-move]")
    for panel in ("rules-panel", "editor-panel"):  # open them: their text counts too
        page.evaluate(f"document.getElementById('{panel}').open = true")
    page.wait_for_selector("#rules-form select")
    assert page.evaluate(SMALL_TEXT) == []
    assert page.query_selector_all("#chart text"), "the chart's labels were measured"
    arrows = page.evaluate(
        """() => [...document.querySelectorAll('.setup summary')].map((s) => {
          const before = getComputedStyle(s, '::before');
          return [s.textContent.trim(), parseFloat(before.borderLeftWidth), before.transform];
        })"""
    )
    closed = page.evaluate(
        "() => { const d = document.getElementById('rules-panel'); d.open = false; "
        "return getComputedStyle(d.querySelector('summary'), '::before').transform; }"
    )
    names = [name for name, _, _ in arrows]
    assert names[:2] == ["Rules", "Set up a position"]
    assert all(width > 0 for _, width, _ in arrows), arrows  # an arrow drawn on each
    assert arrows[0][2] != closed, "the arrow turns when the panel opens"
    context.close()


def test_a_review_opens_at_the_start_and_n_goes_to_its_first_mistake(
    page: Any, oracle: Flask
) -> None:
    page.goto(SEED_000_URL)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-loss]').length === 24", timeout=60_000
    )
    assert page.evaluate("location.hash") == "#0"
    assert page.get_attribute("#record [data-index='0']", "aria-current") == "step"
    review = oracle.test_client().post(
        "/v1/games/analysis", json={"rules": "kalaha", "game": SEED_000}
    )
    moves = review.get_json()["moves"]
    losing = [i for i, m in enumerate(moves) if m["loss"] > 0]
    assert page.is_visible("#next-mistake")
    assert f"{len(losing)} sowings lose seeds" in page.inner_text("#mistake-info")
    # The start shows the position before sowing 0 (a mistake itself in this game: "4?").
    ahead = [i for i in losing if i > 0]
    page.keyboard.press("n")
    page.wait_for_function(f"() => location.hash === '#{ahead[0]}'")
    page.click("#next-mistake")
    page.wait_for_function(f"() => location.hash === '#{ahead[1]}'")
    assert shown_values(page) == api_values(oracle, moves[ahead[1]]["position"], "kalaha")
    played = page.query_selector("[data-move].played")
    assert played is not None and played.get_attribute("data-move") == str(moves[ahead[1]]["move"])


def test_the_page_says_what_it_waits_for(browser: Any, base_url: str) -> None:
    """Before the first answer the board's place says it is loading and the move list that
    it searches; a game says it is being opened, then reviewed."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=base_url)
    page = context.new_page()
    page.route("**/v1/analysis*", lambda route: None)  # never answered
    page.route("**/v1/rules", lambda route: None)
    page.goto("/")  # the start: drawn once the rules or the answer arrive
    assert page.is_visible("#board .loading")
    assert "Loading the position" in page.inner_text("#board")
    page.wait_for_function(
        "() => document.getElementById('moves').textContent.includes('Searching')"
    )
    page.goto(f"/?position={MID_GAME}&rules=kalah")  # a position in the URL: drawn at once
    page.wait_for_selector("#board [data-house='north-1']")
    page.wait_for_function(
        "() => document.getElementById('moves').textContent.includes('Searching')"
    )
    assert page.is_visible("#busy")
    page.route("**/v1/play", lambda route: None)
    page.goto(SEED_000_URL)
    page.wait_for_function(
        "() => document.getElementById('review-status').textContent.includes('Opening the game')"
    )
    assert page.is_visible("#board .loading")
    page.unroute("**/v1/play")
    page.route("**/v1/games/analysis", lambda route: None)
    page.goto(SEED_000_URL + "#3")
    page.wait_for_function(
        "() => document.getElementById('review-status').textContent.includes('Reviewing')"
    )
    context.close()


def test_the_databases_being_built_are_shown_with_their_progress(page: Any, base_url: str) -> None:
    rules = requests.get(base_url + "/v1/rules", timeout=30).json()
    rules["databases"]["builds"] = [
        {
            "rules": "h6-nonempty-either-owner",
            "presets": ["kalah", "kalah-pie"],
            "max_seeds": 26,
            "state": "building",
            "seconds": None,
            "progress": 0.35,
            "eta_s": 80.0,
        },
        {
            "rules": "h6-nonempty-mover-owner",
            "presets": ["kalaha"],
            "max_seeds": 24,
            "state": "queued",
            "seconds": None,
            "progress": 0.0,
            "eta_s": None,
        },
    ]
    page.route("**/v1/rules", lambda route: route.fulfill(json=rules))
    page.goto(f"/?position={MID_GAME}&rules=kalah")
    page.wait_for_selector("#databases:not([hidden])")
    text = page.inner_text("#databases")
    assert "kalah/kalah-pie (26 seeds): 35%, about 1 min 20 s left" in text
    assert "kalaha (24 seeds): waiting" in text


KGP_12 = "/?position=start&rules=kgp&houses=12&seeds=12"


def test_a_twelve_house_board_is_played_picked_and_edited(
    browser: Any, base_url: str, artifacts: Path
) -> None:
    """KGP's largest board: 12 moves with values, the picker allows 12 houses and 24 seeds,
    the editor 600 seeds, house 10 is played by its key 'a'; legible at phone and desktop
    width (the board scrolls on a phone, the page does not)."""
    for width, height in ((390, 844), (1280, 900)):
        context = browser.new_context(
            viewport={"width": width, "height": height}, base_url=base_url
        )
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m, errors=errors: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.goto(KGP_12)
        page.wait_for_function(
            "() => document.querySelectorAll('[data-move]').length === 12", timeout=60_000
        )
        assert page.get_attribute("#rule-houses", "max") == "12"
        assert page.get_attribute("#rule-seeds", "max") == "24"
        assert page.input_value("#rule-preset") == "kgp"
        count = page.eval_on_selector(
            "[data-house='south-1'] .count", "t => t.getBoundingClientRect().height"
        )
        assert count >= 10, f"house counts {count:.1f} px high at {width} px"
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is wider than {width} px"
        page.screenshot(path=str(artifacts / f"board-12x12-{width}.png"), full_page=True)
        if width == 1280:
            page.click("#editor-panel summary")
            assert page.get_attribute("input[name='south-11']", "max") == "600"
            page.keyboard.press("a")  # house 10: 12 seeds, the last one in North's house 9
            page.wait_for_function(
                "() => new URLSearchParams(location.search).get('position') === "
                "'ccccccccc0dd-1-dddddddddccc-0-n'"
            )
            page.wait_for_function(
                "() => document.querySelectorAll('[data-move]').length === 12", timeout=60_000
            )
        context.close()
        assert not errors, errors
