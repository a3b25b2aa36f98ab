"""The OpenAI-API conformance suite: one test per registered check and target.

Checks live in ``pytest_infer.conformance`` (and in users' conftests, through
the same registry); this module only runs them, applies the known deviations of
the framework under test as non-strict xfails (so a fixed one shows as
"fixed"), and turns a ``CheckFailure`` into a short failure with its curl line.
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


def test_check(check_id: str, conformance_ctx: conformance.CheckContext, conformance_expectations: conformance.Expectations, request: pytest.FixtureRequest, infer_record) -> None:
    ctx = conformance_ctx
    known = conformance_expectations.deviation(check_id, ctx.framework, ctx.version)
    if known is not None:
        request.applymarker(pytest.mark.xfail(reason=f"known deviation: {known.describe()}", strict=False))
    check = conformance.REGISTRY[check_id]
    infer_record("infer_severity", check.severity)
    failure = None
    try:
        conformance.run(check_id, ctx)
    except conformance.CheckFailure as exc:
        failure = exc
    if failure is not None:  # outside the except block, so the report shows the failure alone
        infer_record("infer_reproducer", failure.curl)
        pytest.fail(str(failure), pytrace=False)
