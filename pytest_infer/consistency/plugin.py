"""pytest glue of the consistency suite: how many requests are kept in flight
(``--consistency-in-flight``), each target's row of its table, and the mixed-parameter batch, sent
once per target."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..options import DETERMINISTIC, add_option, option_value

if TYPE_CHECKING:
    from .mix import Mix

IN_FLIGHT = "--consistency-in-flight"
DEFAULT_IN_FLIGHT = 8


def pytest_addoption(parser: pytest.Parser) -> None:
    add_option(
        parser,
        IN_FLIGHT,
        "the consistency suite: other requests kept in flight while the measured ones run "
        "(default "
        f"{DEFAULT_IN_FLIGHT}).",
        metavar="N",
    )


def pytest_configure(config: pytest.Config) -> None:
    """A bad count stops the run before any server starts."""
    given = option_value(config, IN_FLIGHT)
    try:
        n = DEFAULT_IN_FLIGHT if given is None else int(given)
    except ValueError:
        n = -1
    if n < 1:
        raise pytest.UsageError(f"{IN_FLIGHT}={given}: a whole number of requests, 1 or more")
    config.stash[_IN_FLIGHT] = n


_IN_FLIGHT = pytest.StashKey[int]()


@pytest.fixture(scope="session")
def consistency_in_flight(pytestconfig: pytest.Config) -> int:
    """How many other requests run beside the measured ones."""
    return pytestconfig.stash[_IN_FLIGHT]


@pytest.fixture(scope="session")
def consistency_deterministic(pytestconfig: pytest.Config) -> bool:
    """Whether the servers run in their batch-invariant mode (``--infer-deterministic``): greedy
    answers in a batch are then held to identical, a near-tie flip included."""
    return bool(option_value(pytestconfig, DETERMINISTIC))


@pytest.fixture(scope="session")
def consistency_record(infer_target, infer_session) -> dict[str, Any]:
    """This target's row of the consistency table: ``batch`` (alone against in a batch), ``params``
    (each check's verdict on the mixed batch)."""
    return infer_session.results.table("consistency").target(infer_target.id)


@pytest.fixture(scope="session")
def consistency_mix(infer_server, infer_endpoint) -> Mix:
    """The mixed-parameter batch of this target: every request alone twice, then all at once (once
    per target; each check judges its part)."""
    # lazy: this plugin loads in every pytest run; its machinery only in a consistency session
    from ..client.http import InferClient
    from .mix import run_mix

    with InferClient(infer_endpoint) as client:
        return run_mix(client)


@pytest.fixture
def consistency_scripting(infer_live_server, infer_endpoint, infer_target) -> Iterator[Any]:
    """A conformance ``CheckContext`` that knows how to force this server's model to write a given
    text, and which parsers it runs (the tool parser's scripts under load); it records nothing in
    the conformance table."""
    # lazy: this plugin loads in every pytest run; its machinery only in a consistency session
    from ..conformance.context import CheckContext
    from ..conformance.plugin import server_scripting

    with CheckContext(
        infer_endpoint,
        framework=infer_live_server.framework,
        version=infer_live_server.version,
        scripting=server_scripting(infer_live_server, infer_target),
    ) as ctx:
        yield ctx


@pytest.fixture(scope="session")
def consistency_reference(pytestconfig: pytest.Config):
    """``reference(model)``: the reference's greedy steps of the numerics prompts for a built-in
    model, computed once per model in the transformers engine's environment; ``NotExercised`` naming
    why there is none."""
    # lazy: this plugin loads in every pytest run; its machinery only in a consistency session
    from ..outcomes import NotExercised
    from .reference import reference_for, reference_steps

    made: dict[str, Any] = {}

    def reference(model: str):
        if model not in made:
            found = reference_for(model)
            made[model] = found if isinstance(found, str) else reference_steps(*found)
        if isinstance(made[model], str):
            raise NotExercised(made[model])
        return made[model]

    return reference
