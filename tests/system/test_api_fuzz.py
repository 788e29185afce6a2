"""schemathesis against the app's own ``/openapi.json``: every operation, generated inputs
(valid and invalid by the spec); no 5xx, and every answer (status, content type, headers,
body) matches the spec.

Not checked: ``positive_data_acceptance`` (a request valid by the spec is answered 2xx). The
spec cannot say which strings are positions of the given rules (a compact notation with the
wrong number of houses is schema-valid text), so those are rightly 4xx problems. Nor, for
``POST /v1/batch`` only, ``negative_data_rejection``: a batch reports an item that cannot be
analysed (bad rules included) as a problem object in that item's slot of a 200 answer, by
design, so one bad item does not sink the other thousands; the batch tests check those slots.
"""

from __future__ import annotations

import schemathesis
from figures import tried
from hypothesis import HealthCheck, settings
from schemathesis.checks import negative_data_rejection, positive_data_acceptance

from kalah_service import create_app

EXAMPLES = 40
"""Per operation and phase; the whole module stays within a few tens of seconds."""

app = create_app(
    {
        "TESTING": True,
        "KALAH_REDIS_URL": "",
        "KALAH_MAX_TIME_MS": 100,  # generated budgets stay small
        "KALAH_DEFAULT_TIME_MS": 50,
        "KALAH_TT_MB": 8,
        "KALAH_LIMIT_ANONYMOUS": "1000000/minute",
    }
)
schema = schemathesis.openapi.from_wsgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_conforms(case: schemathesis.Case) -> None:
    tried(f"schemathesis {case.operation.label}")
    excluded = [positive_data_acceptance]
    if case.operation.label == "POST /v1/batch":
        excluded.append(negative_data_rejection)
    case.call_and_validate(excluded_checks=excluded)
