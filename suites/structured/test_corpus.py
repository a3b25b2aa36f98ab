"""Hand-written schemas, one per known bug class (docs/structured-output.md), each a named test."""

from __future__ import annotations

import pytest

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.structured.corpus import CORPUS, INVALID_SCHEMA
from pytest_infer.structured.judge import (
    broke_or_failed,
    positive_control,
    record_evidence,
    refusal_problem,
    refused_everything,
    run_case,
)

pytestmark = pytest.mark.structured


@pytest.mark.parametrize("case_name", list(CORPUS))
def test_known_bug_class(
    case_name, structured_applied, structured_runner, structured_record, infer_record
):
    case = CORPUS[case_name]
    result = run_case(structured_runner, structured_applied, case.schema, case.instance)
    for attempt in result.attempts:
        structured_record(attempt, case=case_name)
    if result.failures:
        record_evidence(infer_record, result.failures[0])
        head = (
            f"{case_name}: {len(result.failures)} of {len(result.attempts)} seeds "
            + broke_or_failed(result, case.bug)
        )
        pytest.fail(head + "\n" + "\n\n".join(a.describe() for a in result.failures), pytrace=False)
    if result.all_rejected:
        if (problem := refused_everything(structured_runner)) is not None:
            raise Inconclusive(f"{case_name}: {problem}")
        raise Unsupported(case_name, result.attempts[0].verdict.message)
    if (problem := result.too_few_valid) is not None:
        raise Inconclusive(
            f"{case_name}: {problem} (token budget {result.attempts[0].body['max_tokens']})"
        )


def test_invalid_schema_is_rejected(structured_applied, structured_runner, infer_record):
    """An invalid schema must get a clean 4xx: not a crash, not unconstrained text under HTTP 200; judged only
    once the same route answered a known-good schema validly (a route that refuses everything proves nothing)."""
    if (problem := positive_control(structured_runner, structured_applied).problem) is not None:
        raise Inconclusive(problem)
    attempt = structured_runner.run(INVALID_SCHEMA, structured_applied, 64, fresh=True, refuse=True)
    if (problem := refusal_problem(attempt)) is not None:
        record_evidence(infer_record, attempt)
        pytest.fail(f"{problem}\n{attempt.describe()}", pytrace=False)
