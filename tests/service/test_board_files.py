"""The board page's files as the service serves them: from the package, under a versioned
prefix cached for ever, the page itself revalidated, nothing from another host."""

from __future__ import annotations

import re

from flask.testing import FlaskClient

from kalah_service.board.page import VERSION

URL = re.compile(r'(?:src|href)="([^"]+)"')
IMPORT = re.compile(r'from "(\./[^"]+)"')


def test_the_page_is_revalidated_and_names_versioned_files(client: FlaskClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert page.headers["Cache-Control"] == "no-cache"
    again = client.get("/", headers={"If-None-Match": page.headers["ETag"]})
    assert again.status_code == 304
    urls = URL.findall(page.get_data(as_text=True))
    files = [u for u in urls if u.startswith("/board/")]
    assert files and all(u.startswith(f"/board/{VERSION}/") for u in files)
    assert all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    for url in files:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"


def test_every_module_import_is_served_and_the_page_is_small(client: FlaskClient) -> None:
    seen: dict[str, int] = {}
    queue = [f"/board/{VERSION}/js/main.js", f"/board/{VERSION}/js/prefetch.js"]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.mimetype == "text/javascript"
        seen[url] = len(response.data)
        base = url.rsplit("/", 1)[0]
        queue += [f"{base}/{name[2:]}" for name in IMPORT.findall(response.get_data(as_text=True))]
    assert len(seen) >= 10  # small modules, one job each
    page = client.get("/")
    css = client.get(f"/board/{VERSION}/board.css")
    total = len(page.data) + len(css.data) + sum(seen.values())
    assert total < 150_000  # the whole page without the API's answers (the browser test counts all)


def test_files_outside_the_version_are_revalidated_and_nothing_else_is_served(
    client: FlaskClient,
) -> None:
    assert client.get("/board/js/main.js").headers["Cache-Control"] == "no-cache"
    old = client.get("/board/0123456789ab/js/main.js")  # an old page after an upgrade
    assert old.status_code == 200 and old.headers["Cache-Control"] == "no-cache"
    for path in (
        "/board/index.html",
        f"/board/{VERSION}/index.html",
        "/board/../page.py",
        "/board/%2e%2e/page.py",
        "/docs/assets/swagger-ui-bundle.js.map",
        "/docs/assets/../../__init__.py",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.mimetype == "application/problem+json", path


def test_docs_name_only_this_service(client: FlaskClient) -> None:
    docs = client.get("/docs")
    assert docs.status_code == 200
    html = docs.get_data(as_text=True)
    assert "http:" not in html and "https:" not in html
    for url in URL.findall(html):
        assert url.startswith("/") and not url.startswith("//"), url
        assert client.get(url).status_code == 200, url
    csp = docs.headers["Content-Security-Policy"]
    assert "http" not in csp and "script-src 'self';" in csp
