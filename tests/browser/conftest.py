"""The board page in a real browser: Debian's ``chromium`` driven by Playwright, against the
service under gunicorn on a loopback port (the embedded default, as ``kalah serve`` runs it).

A missing browser fails the run: the README's test command installs it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Gunicorn
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("KALAH_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("KALAH_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
"""Where the screenshots go (CI keeps this folder)."""


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """gunicorn serving the app (one worker, no Redis) on a free port (tests/harness.py)."""
    server = Gunicorn(
        {
            "KALAH_REDIS_URL": "",
            "KALAH_MAX_TIME_MS": "10000",
            "KALAH_DEFAULT_TIME_MS": "500",  # estimates in half a second: less CPU per test
        },
        workers=1,
    )
    try:
        yield server.start(ready=True)
    finally:
        server.close()


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} not found: the browser tests need Debian's chromium "
            "(apt-get install -y chromium chromium-driver; the README's test command does it)"
        )
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
    yield browser
    browser.close()


class PageLog:
    """What a page did: every request's URL and every console error or uncaught exception
    (a Content-Security-Policy violation is a console error)."""

    def __init__(self, page: Page) -> None:
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))


@pytest.fixture
def page(browser: Browser, base_url: str) -> Iterator[Any]:
    """A fresh page at desktop width; fails the test on any console error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=base_url)
    page = context.new_page()
    page.log = PageLog(page)  # type: ignore[attr-defined]
    yield page
    errors = page.log.errors  # type: ignore[attr-defined]
    context.close()
    assert not errors, errors


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
