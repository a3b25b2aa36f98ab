"""Bad schemas: the server refuses what it cannot honour, and survives everything.

Survival: after each malformed, unsatisfiable, huge or deeply recursive schema
a known-good schema still gets a valid answer. Refusal: a schema no answer can honour
(malformed or unsatisfiable) gets a clean 4xx, not a 5xx and not HTTP 200. Both are
judged only after the route answered a known-good schema validly (the positive control):
otherwise they are inconclusive, naming the control.
"""

from __future__ import annotations

import pytest

from pytest_infer.outcomes import Inconclusive
from pytest_infer.structured.corpus import BAD_SCHEMAS
from pytest_infer.structured.judge import (
    positive_control,
    record_evidence,
    refusal_problem,
    survive,
)
from pytest_infer.structured.runner import RESPONSE_FORMAT

pytestmark = pytest.mark.structured
REFUSABLE = [
    name for name, (kind, _) in BAD_SCHEMAS.items() if kind in ("malformed", "unsatisfiable")
]


@pytest.mark.parametrize("name", list(BAD_SCHEMAS))
def test_server_survives(name, structured_runner, structured_support, infer_record):
    structured_support(RESPONSE_FORMAT).require_applied(RESPONSE_FORMAT)
    kind, schema = BAD_SCHEMAS[name]
    survival = survive(structured_runner, RESPONSE_FORMAT, schema)
    if survival.healthy is None or survival.attempt is None:
        raise Inconclusive(f"{kind} schema {name!r} not sent: {survival.why}")
    if not survival.healthy:
        record_evidence(infer_record, survival.attempt)
        pytest.fail(
            f"the server did not survive {kind} schema {name!r}: {survival.why}\n{survival.attempt.describe()}",
            pytrace=False,
        )
    answer = survival.attempt.verdict
    if kind in ("huge", "deep") and answer.outcome.failed:
        record_evidence(infer_record, survival.attempt)
        pytest.fail(
            f"{kind} schema {name!r} survived, but its answer is {answer.signature}\n{survival.attempt.describe()}",
            pytrace=False,
        )


@pytest.mark.parametrize("name", REFUSABLE)
def test_bad_schema_is_refused(name, structured_applied, structured_runner, infer_record):
    kind, schema = BAD_SCHEMAS[name]
    if (problem := positive_control(structured_runner, structured_applied).problem) is not None:
        raise Inconclusive(f"{kind} schema {name!r} not sent: {problem}")
    attempt = structured_runner.run(schema, structured_applied, 64, fresh=True, refuse=True)
    if (problem := refusal_problem(attempt)) is not None:
        record_evidence(infer_record, attempt)
        pytest.fail(f"{kind} schema {name!r}: {problem}\n{attempt.describe()}", pytrace=False)
