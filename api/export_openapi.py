"""Write the OpenAPI document to ``api/openapi.json``: ``python -m kalah_service.export_openapi``.

``--check`` exits 1 (and writes nothing) when the committed file differs from the code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import openapi_text

SPEC_PATH = Path(__file__).with_name("openapi.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kalah_service.export_openapi", description=__doc__
    )
    parser.add_argument(
        "--check", action="store_true", help="only check that the file is up to date"
    )
    parser.add_argument(
        "--output", type=Path, default=SPEC_PATH, help="where to write (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    text = openapi_text()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date: run python -m kalah_service.export_openapi",
                file=sys.stderr,
            )
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
