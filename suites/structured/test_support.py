"""What the server does with ``response_format`` at all: honoured, ignored, or rejected."""

from __future__ import annotations

import pytest

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.structured.judge import record_evidence, refused_everything

pytestmark = pytest.mark.structured


def test_schema_is_honoured(
    structured_request_path, structured_support, structured_runner, structured_record, infer_record
):
    support = structured_support(structured_request_path)
    for attempt in support.attempts:
        structured_record(attempt)
    infer_record("infer_evidence", support.evidence)
    infer_record("infer_structured_support", f"{structured_request_path.name}: {support.word}")
    if support.word == "rejected":
        if (problem := refused_everything(structured_runner)) is not None:
            raise Inconclusive(problem)
        raise Unsupported(f"json_schema via {structured_request_path.name}", support.detail)
    if support.word == "inconclusive":
        raise Inconclusive(support.detail)
    if support.word != "honoured":
        bad = next(a for a in support.attempts if a.verdict.outcome.failed)
        record_evidence(infer_record, bad)
        pytest.fail(
            f"{structured_request_path.name} is {support.word.upper()}: {support.detail}\n{bad.describe()}",
            pytrace=False,
        )
