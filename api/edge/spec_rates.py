"""The rate limits in the OpenAPI spec: optional bearer authentication, the rate-limit
headers and the 401 and 429 problems on every charged operation (an apispec plugin)."""

from __future__ import annotations

from typing import Any

from apispec import APISpec, BasePlugin

from .charging import LIMITED_PREFIX

_HEADER_DOCS = {
    "RateLimit-Limit": "Units in the caller's bucket per window.",
    "RateLimit-Remaining": "Units left in the current window after this request.",
    "RateLimit-Reset": "Unix time at which the current window ends.",
    "Kalah-Cost": "Units this request was charged.",
}


class RateLimitDocsPlugin(BasePlugin):
    """Documents the charged operations: optional bearer authentication, the rate-limit
    headers and the 401 and 429 problems, on every path under ``/v1/``."""

    def init_spec(self, spec: APISpec) -> None:
        # The key is optional everywhere, said once at the document's root (anonymous, or the
        # bearer key) rather than on each operation: client generators (openapi-python-client)
        # read an operation's own ``security`` as "a key is required" and demand an
        # authenticated client. Operations outside ``/v1/`` take no key: ``security: []``.
        spec.options.setdefault("security", [{}, {"apiKey": []}])
        spec.components.security_scheme(
            "apiKey",
            {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key made by `kalah keys create`; optional: without one "
                "the caller is anonymous, limited by IP.",
            },
        )

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not path or not operations:
            return
        if not path.startswith(LIMITED_PREFIX):
            for operation in operations.values():
                operation.setdefault("security", [])
            return
        problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        headers = {
            n: {"description": d, "schema": {"type": "integer"}} for n, d in _HEADER_DOCS.items()
        }
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "requestBody" in operation:
                responses.setdefault(
                    "415",
                    {"description": "A body that is not JSON.", "content": problem},
                )
            for status in ("200", "304"):
                if status in responses:
                    responses[status].setdefault("headers", {}).update(headers)
            responses.setdefault(
                "401",
                {"description": "Unknown, revoked or malformed API key.", "content": problem},
            )
            responses.setdefault(
                "429",
                {
                    "description": "The caller's rate limit is spent (see the API description).",
                    "content": problem,
                    "headers": {
                        "Retry-After": {
                            "description": "Seconds until the bucket refills.",
                            "schema": {"type": "integer"},
                        },
                        **headers,
                    },
                },
            )
