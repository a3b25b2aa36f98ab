"""pytest glue of the conformance suite: its ini option, the known-deviation files and the check
context per target.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .. import conformance

if TYPE_CHECKING:
    from .scripts import Scripting

EXPECTATIONS_INI = "infer_expectations"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        EXPECTATIONS_INI,
        type="paths",
        default=[],
        help="known-deviation YAML files or folders, added to the bundled ones (conformance).",
    )


@pytest.fixture(scope="session")
def conformance_expectations(pytestconfig: pytest.Config) -> conformance.Expectations:
    """The bundled expectations plus any files or folders named by the ``infer_expectations`` ini
    option.
    """
    try:
        return conformance.load_expectations(
            pytestconfig.getini(EXPECTATIONS_INI), [c.id for c in conformance.REGISTRY]
        )
    except conformance.ExpectationsError as exc:
        pytest.fail(f"conformance expectations: {exc}", pytrace=False)


@pytest.fixture
def conformance_ctx(
    infer_live_server, infer_endpoint, infer_target, infer_session, conformance_expectations
) -> Iterator[conformance.CheckContext]:
    """A ``CheckContext`` for the server under test, with the features its framework does not offer;
    the shape of every answer it gets goes into the suite's table."""
    builtin = infer_target.builtin
    table = infer_session.results.table("conformance")
    with conformance.CheckContext(
        infer_endpoint,
        framework=infer_live_server.framework,
        version=infer_live_server.version,
        tiny=builtin is not None and builtin.scripted,
        no_tools=builtin.without_tools if builtin else None,
        unsupported=conformance_expectations.unsupported_features(
            infer_live_server.framework, infer_live_server.version
        ),
        shapes=lambda endpoint, answer: table.record(infer_target.id, endpoint, answer),
        request_fields=lambda endpoint, statuses: table.record_fields(
            infer_target.id, endpoint, statuses
        ),
        scripting=server_scripting(infer_live_server, infer_target),
    ) as ctx:
        yield ctx


def server_scripting(server: Any, target: Any) -> Scripting:
    """How to script a live server: its adapter's field that forces text at its version, and the
    parsers the target runs (the conformance and consistency suites both drive its model so)."""
    # lazy: this plugin loads in every pytest run; scripting only in a session that drives a model
    from .scripts import Scripting

    adapter, version, parsers = server.adapter, server.version, target.parsers
    return Scripting(
        parsers.tool,
        parsers.reasoning,
        lambda regex: adapter.forced_text_fields(regex, version),
        adapter.name,
    )
