"""The OpenAI-API conformance suite: one test per registered check and target.

Checks live in ``pytest_infer.conformance`` (and in users' conftests, through
the same registry); this module only runs them, records each pass's evidence
(what it judged), and turns a ``CheckFailure`` into a short failure with its
curl line. A known deviation of the framework under test is a non-strict xfail
of exactly the failure its declaration matches (so a fixed one shows as
"fixed"); the check goes on past it, and any other failure of the check stays
a failure, saying why no declaration excused it.
"""

from __future__ import annotations

import pytest

from pytest_infer import conformance

pytestmark = pytest.mark.conformance


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize at collection, after every conftest has registered its checks."""
    if "check_id" not in metafunc.fixturenames:
        return
    params = []
    for check in conformance.REGISTRY:
        marks = [pytest.mark.infer_check(check.id)]
        if check.capable_model:
            marks.append(pytest.mark.needs_capable_model(check.title))
        params.append(pytest.param(check.id, id=check.id, marks=marks))
    metafunc.parametrize("check_id", params)


def test_check(
    check_id: str,
    conformance_ctx: conformance.CheckContext,
    conformance_expectations: conformance.Expectations,
    request: pytest.FixtureRequest,
    infer_record,
) -> None:
    ctx = conformance_ctx
    known = conformance_expectations.deviations_of(check_id, ctx.framework, ctx.version)
    if known:  # raises=: only the failure a declaration matches is the expected one
        reason = " | ".join(e.describe() for e in known)
        request.applymarker(
            pytest.mark.xfail(
                reason=f"known deviation: {reason}",
                strict=False,
                raises=conformance.DeclaredDeviation,
            )
        )
    check = conformance.REGISTRY[check_id]
    infer_record("infer_severity", check.severity)

    def excuse(failure: conformance.CheckFailure) -> str | None:
        entry = conformance_expectations.judge(
            check_id, ctx.framework, ctx.version, failure.judged
        ).entry
        return None if entry is None else entry.describe()

    declared: conformance.DeclaredDeviation | None = None
    try:
        evidence = conformance.run(check_id, ctx, excuse if known else None)
    except conformance.DeclaredDeviation as exc:
        declared = exc
    except conformance.CheckFailure as exc:
        failure = exc
    else:
        infer_record("infer_evidence", evidence)
        return
    # outside the except blocks, so the report shows the failure alone
    if declared is not None:
        infer_record("infer_reproducer", declared.curl)
        raise declared.with_traceback(None)
    infer_record("infer_reproducer", failure.curl)
    verdict = conformance_expectations.judge(check_id, ctx.framework, ctx.version, failure.judged)
    pytest.fail(f"{failure}\n{verdict.note}" if verdict.note else str(failure), pytrace=False)
