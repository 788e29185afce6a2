"""The board's live analysis in headless Chromium: *Search longer* streams the search and Stop
ends it (no engine left busy), and searching longer again continues from the depth shown."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import requests
from harness import wait_for

from .board_page import shown_values


def engines_busy(base_url: str) -> int:
    text = requests.get(f"{base_url}/metrics", timeout=10).text
    found = re.findall(r"^kalah_engines_busy(?:\{[^}]*\})? (\S+)$", text, re.MULTILINE)
    return int(sum(float(v) for v in found))


@pytest.mark.parametrize("width", [390, 1280])
def test_search_longer_streams_the_search_and_stop_ends_it(
    browser: Any, base_url: str, artifacts: Path, width: int
) -> None:
    """Issue 50, deliver 2: "Search longer" is a live analysis: the values, bounds and line
    change while one search runs, and "Stop" closes the stream, which stops the search."""
    context = browser.new_context(viewport={"width": width, "height": 900}, base_url=base_url)
    page = context.new_page()
    page.goto("/?position=start&rules=kalah&seeds=5")  # Kalah(6,5): estimates only
    shown_values(page)
    with page.expect_request(
        lambda r: (
            "/v1/analysis" in r.url
            and r.headers.get("accept") == "application/x-ndjson"
            and "time_ms=60000" in r.url
        )  # the stream's maximum (/v1/rules)
    ):
        page.click("#longer")
    page.wait_for_function(
        "() => document.querySelector('#search-info').textContent.includes('searching')"
    )
    assert page.inner_text("#longer") == "Stop"
    first = page.inner_text("#search-info")
    # The same search, later: its summary (depth, bounds, nodes) has changed.
    page.wait_for_function(
        "(first) => { const t = document.querySelector('#search-info').textContent;"
        " return t.includes('searching') && t !== first; }",
        arg=first,
    )
    page.screenshot(path=str(artifacts / f"board-live-{width}.png"), full_page=True)
    page.click("#longer")  # Stop
    page.wait_for_function(
        "() => document.querySelector('#search-info').textContent.includes('stopped')"
    )
    assert page.inner_text("#longer") == "Search longer"
    wait_for(lambda: engines_busy(base_url) == 0, 60, "the stopped search's engine")
    context.close()


SUMMARIES = """() => {
  window.summaries = [];
  const info = document.querySelector('#search-info');
  new MutationObserver(() => window.summaries.push(info.textContent)).observe(
    info, { childList: true, characterData: true, subtree: true });
}"""
"""Records every text the search summary shows (window.summaries)."""


def shown_depths(page: Any) -> list[int]:
    texts = page.evaluate("() => window.summaries")
    return [int(m.group(1)) for m in map(re.compile(r"at depth (\d+)").search, texts) if m]


def search_longer_then_stop(page: Any) -> None:
    """Search longer, watch the summary change while that one search runs, then stop it."""
    seen = page.evaluate("() => window.summaries.length")
    page.click("#longer")
    page.wait_for_function(
        "(seen) => window.summaries.slice(seen).filter(t => t.includes('searching')).length >= 2",
        arg=seen,
    )
    assert page.inner_text("#longer") == "Stop"
    page.click("#longer")
    page.wait_for_function(
        "() => document.querySelector('#search-info').textContent.includes('stopped')"
    )


def test_search_longer_continues_from_the_depth_shown(page: Any, base_url: str) -> None:
    """Issue 50, deliver 2: "Search longer" continues from what the board shows: its stream
    (a new search, which searches the shallow depths again) never shows a shallower estimate
    than the one-shot answer's, nor does searching longer again after a stop."""
    page.goto("/?position=start&rules=kalah&seeds=5")  # Kalah(6,5): estimates only
    shown_values(page)
    first = re.search(r"at depth (\d+)", page.inner_text("#search-info"))
    assert first is not None
    page.evaluate(SUMMARIES)
    search_longer_then_stop(page)
    stopped = len(shown_depths(page))
    search_longer_then_stop(page)  # searching longer again: the same depths, or deeper
    depths = shown_depths(page)
    assert len(depths) > stopped
    assert depths == sorted(depths) and depths[0] >= int(first.group(1)), depths
    wait_for(lambda: engines_busy(base_url) == 0, 60, "the stopped search's engine")
