"""Hand-written schemas, one per known bug class (docs/structured-output.md), each a named test."""
from __future__ import annotations

import pytest

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.structured.checks import record_evidence, refusal_problem, run_case
from pytest_infer.structured.corpus import CORPUS, INVALID_SCHEMA

pytestmark = pytest.mark.structured


@pytest.mark.parametrize("case_name", list(CORPUS))
def test_known_bug_class(case_name, structured_request_path, structured_runner, structured_record, infer_record):
    case = CORPUS[case_name]
    result = run_case(structured_runner, structured_request_path, case.schema, case.instance)
    for attempt in result.attempts:
        structured_record(attempt)
    if result.failures:
        record_evidence(infer_record, result.failures[0])
        head = f"{case_name}: {len(result.failures)} of {len(result.attempts)} seeds broke the schema ({case.bug})"
        pytest.fail(head + "\n" + "\n\n".join(a.describe() for a in result.failures), pytrace=False)
    if result.all_rejected:
        raise Unsupported(case_name, result.attempts[0].verdict.message)
    if result.all_truncated:
        raise Inconclusive(f"every seed ran into the token limit ({result.attempts[0].body['max_tokens']} tokens)")


def test_invalid_schema_is_rejected(structured_request_path, structured_runner, infer_record):
    """An invalid schema must get a clean 4xx: not a crash, not unconstrained text under HTTP 200."""
    attempt = structured_runner.run(INVALID_SCHEMA, structured_request_path, 64, fresh=True, refuse=True)
    if (problem := refusal_problem(attempt)) is not None:
        record_evidence(infer_record, attempt)
        pytest.fail(f"{problem}\n{attempt.describe()}", pytrace=False)
