"""Request bodies the JSON decoder cannot take: refused as 400 problems before any view.

webargs decodes bodies with :func:`json.loads` and turns only a ``JSONDecodeError`` into a 400;
a body nested deeper than the interpreter's recursion limit (``[[[[...``, a few KiB) or holding
an integer of more than 4300 digits raises something else and would be a 500. This hook decodes
a JSON body once more beforehand (bodies are at most 64 KiB: microseconds) and refuses those.
"""

from __future__ import annotations

import json

from flask import Flask, request

from .errors import ApiProblem


def init_body_guard(app: Flask) -> None:
    @app.before_request
    def refuse_undecodable_json() -> None:
        if request.method not in ("POST", "PUT", "PATCH") or not request.is_json:
            return
        data = request.get_data(cache=True)
        if not data:
            return
        try:
            json.loads(data)
        except RecursionError:
            raise ApiProblem(
                "malformed-body", "the request body is nested too deeply", field="body"
            ) from None
        except ValueError as error:  # JSONDecodeError is left to webargs (same answer)
            if isinstance(error, json.JSONDecodeError):
                return
            raise ApiProblem(
                "malformed-body", f"the request body cannot be decoded: {error}", field="body"
            ) from None
