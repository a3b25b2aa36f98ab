"""Fixtures of the robustness suite; the machinery lives in robustness_kit (importable by the tests)."""
from __future__ import annotations

import httpx
import pytest

from robustness_kit import COUNTERS, DEFAULT_CONTEXT, REJECT_TIMEOUT, TINY_CONTEXT, Guard


@pytest.fixture(scope="session")
def robustness_guard(infer_target, infer_server, infer_session) -> Guard:
    """This target's Guard; its tally is ``infer_session.results.robustness[target]``."""
    tally = infer_session.results.robustness.setdefault(infer_target.id, {})
    for key in COUNTERS:
        tally.setdefault(key, 0)
    timeout = min(REJECT_TIMEOUT, infer_session.options.request_timeout)
    return Guard(infer_target.id, infer_server, tally, timeout)


@pytest.fixture(scope="session")
def context_length(infer_target, infer_server, infer_session) -> int:
    """The model's context in tokens: advertised by /v1/models (vLLM: max_model_len), else a known or large default."""
    headers = {"Authorization": f"Bearer {infer_session.options.api_key}"} if infer_session.options.api_key else {}
    try:
        data = httpx.get(f"{infer_server.base_url}/v1/models", headers=headers, timeout=10).json().get("data", [])
        for card in data:
            for key in ("max_model_len", "context_length", "max_context_length"):
                if isinstance(card.get(key), int) and card.get(key) > 0:
                    return card[key]
    except (httpx.HTTPError, ValueError, AttributeError):
        pass
    return TINY_CONTEXT if infer_target.model == "tiny" else DEFAULT_CONTEXT
