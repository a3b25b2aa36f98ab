"""pytest glue of the robustness suite: a Guard per target, counting into the suite's table."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .kit import Guard


@pytest.fixture(scope="session")
def robustness_guard(infer_target, infer_server, infer_endpoint, infer_session) -> Guard:
    """This target's Guard; its tally is the target's row of the robustness table."""
    # lazy: this plugin loads in every pytest run; its kit only in a robustness session
    from .kit import REJECT_TIMEOUT, Guard

    endpoint = replace(infer_endpoint, timeout=min(REJECT_TIMEOUT, infer_endpoint.timeout))
    return Guard(
        infer_target.id,
        infer_server,
        endpoint,
        infer_session.results.table("robustness").tally(infer_target.id),
    )


@pytest.fixture(scope="session")
def robustness_known_context(infer_server, infer_endpoint) -> tuple[int | None, str]:
    """The model's context where it is known (advertised in /v1/models, else set by the plugin's
    launch line), and where it was read; None and why elsewhere: what a prompt over the context is
    judged by."""
    return infer_server.known_context(infer_endpoint)


@pytest.fixture(scope="session")
def robustness_context_length(infer_target, robustness_known_context) -> int:
    """A size for long requests, never a limit judged: the known context, else a built-in model's
    assumed one, else a large default."""
    # lazy: this plugin loads in every pytest run; its kit only in a robustness session
    from .kit import DEFAULT_CONTEXT

    assumed = infer_target.builtin.known_context if infer_target.builtin else DEFAULT_CONTEXT
    return robustness_known_context[0] or assumed
