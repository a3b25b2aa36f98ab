"""Fixtures of the conformance suite: the check context per target and the known-deviation files."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_infer import conformance

EXPECTATIONS_INI = "infer_expectations"


@pytest.fixture(scope="session")
def conformance_expectations(pytestconfig: pytest.Config) -> conformance.Expectations:
    """The bundled expectations plus any files or folders named by the ``infer_expectations`` ini option."""
    try:
        extra = pytestconfig.getini(EXPECTATIONS_INI)
    except ValueError:  # the option is registered by the plugin; tolerate an older one
        extra = []
    try:
        return conformance.load_expectations(extra, [c.id for c in conformance.REGISTRY])
    except conformance.ExpectationsError as exc:
        pytest.fail(f"conformance expectations: {exc}", pytrace=False)


@pytest.fixture
def conformance_ctx(infer_live_server, infer_session, infer_target, conformance_expectations) -> Iterator[conformance.CheckContext]:
    """A ``CheckContext`` for the server under test, with the features its framework does not offer."""
    with conformance.CheckContext(
        base_url=infer_live_server.base_url,
        model=infer_live_server.model,
        framework=infer_live_server.framework,
        version=infer_live_server.version,
        api_key=infer_session.options.api_key,
        timeout=infer_session.options.request_timeout,
        tiny=infer_target.model == "tiny",
        unsupported=conformance_expectations.unsupported_features(infer_live_server.framework, infer_live_server.version),
    ) as ctx:
        yield ctx
