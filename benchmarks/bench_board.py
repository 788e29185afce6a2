"""The analysis board's weight and its time to first values, in headless Chromium.

    python benchmarks/bench_board.py              # 15 loads per scenario
    python benchmarks/bench_board.py --loads 31

Starts the service under gunicorn (the embedded default, as ``kalah serve`` runs it) on a
loopback port and Debian's ``chromium`` through Playwright, then measures:

- **weight**: every byte the page transfers on a first visit (headers and bodies, as the
  browser counts them), without ``/docs``;
- **time to first values** of a cached position (the answer is in the server's cache; the
  browser's is empty): from navigation start to the ``kalah:first-values`` performance mark
  the page sets when the first move values are on screen; cold (a new browser context per
  load) and warm (a reload: files revalidated with 304s, the exact answer from the browser's
  cache);
- **baseline**: the same browser's ``fetch`` of that ``GET /v1/analysis`` alone (from an idle
  ``/docs`` page, with an empty browser cache), so the ratio says what the page itself adds.

Prints medians (and min/max) in milliseconds. Loopback only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from harness import Gunicorn  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

POSITION = "109101-10-231350-12-n"
"""A mid-game Kalah(6,4) position (the browser tests' own)."""
QUERY = f"position={POSITION}&rules=kalah"
MARK = "kalah:first-values"


def start_server() -> tuple[Gunicorn, str]:
    """gunicorn with one worker and no Redis (tests/harness.py), the position cached."""
    server = Gunicorn(
        {
            "KALAH_REDIS_URL": "",
            "KALAH_EGDB_PATH": "off",
            "KALAH_MAX_TIME_MS": "10000",
            "KALAH_LIMIT_ANONYMOUS": "1000000/minute",
        },
        workers=1,
    )
    base = server.start(ready=True)
    with urllib.request.urlopen(f"{base}/v1/analysis?{QUERY}", timeout=30):
        pass  # now cached
    return server, base


def first_values_ms(page: object) -> float:
    page.wait_for_function(  # type: ignore[attr-defined]
        f"() => performance.getEntriesByName('{MARK}').length > 0"
    )
    return float(
        page.evaluate(f"() => performance.getEntriesByName('{MARK}')[0].startTime")  # type: ignore[attr-defined]
    )


def describe(name: str, values: list[float]) -> str:
    return (
        f"{name:<34} median {statistics.median(values):7.1f} ms"
        f"   min {min(values):7.1f}   max {max(values):7.1f}   (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loads", type=int, default=15)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    server, base = start_server()
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=args.chromium)

            # Weight of a first visit.
            context = browser.new_context()
            page = context.new_page()
            responses = []
            page.on("requestfinished", lambda request: responses.append(request))
            page.goto(f"{base}/?{QUERY}")
            first_values_ms(page)
            page.wait_for_load_state("networkidle")
            total = 0
            rows = []
            for request in responses:
                sizes = request.sizes()
                size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
                total += size
                rows.append((size, request.url.removeprefix(base)))
            context.close()
            print(f"page weight, first visit: {total:,} bytes in {len(rows)} requests")
            for size, url in sorted(rows, reverse=True):
                print(f"  {size:8,}  {url}")

            cold, warm, baseline = [], [], []
            for _ in range(args.loads):
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{base}/?{QUERY}")
                cold.append(first_values_ms(page))
                page.reload()
                warm.append(first_values_ms(page))
                context.close()

                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{base}/docs")  # a same-origin document whose policy allows fetch
                page.wait_for_load_state("networkidle")
                baseline.append(
                    page.evaluate(
                        "async (url) => { const t = performance.now();"
                        " await (await fetch(url)).json(); return performance.now() - t; }",
                        f"{base}/v1/analysis?{QUERY}",
                    )
                )
                context.close()
            browser.close()
    finally:
        server.close()

    print()
    print(describe("first values, cold browser cache", cold))
    print(describe("first values, reload", warm))
    print(describe("baseline: fetch of the analysis", baseline))
    print(
        f"ratio cold page / bare fetch: {statistics.median(cold) / statistics.median(baseline):.1f}"
    )


if __name__ == "__main__":
    main()
