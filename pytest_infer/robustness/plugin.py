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
        infer_target.id, infer_server, endpoint, infer_session.results.table("robustness").tally(infer_target.id)
    )


@pytest.fixture(scope="session")
def robustness_context_length(infer_target, infer_endpoint) -> int:
    """The model's context in tokens as /v1/models advertises it (vLLM: max_model_len), else a built-in model's
    known one, else a large default."""
    # lazy: this plugin loads in every pytest run; its kit only in a robustness session
    from ..models import known_context
    from .kit import DEFAULT_CONTEXT

    return infer_endpoint.context_length() or known_context(infer_target.model) or DEFAULT_CONTEXT
