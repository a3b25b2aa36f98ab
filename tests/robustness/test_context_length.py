"""The context the robustness suite's over-context and long-stream requests are sized by, on a server that does not
advertise one (transformers serve): a built-in model's own, not 131072 tokens that a CPU would take an hour to read."""

from __future__ import annotations

import pytest

from pytest_infer.models import GEMMA, TINY
from pytest_infer.models.gemma import GEMMA_LAUNCH
from pytest_infer.robustness.kit import DEFAULT_CONTEXT
from pytest_infer.testing.fakeserver import FakeServer

PROBE = """
def test_context(robustness_context_length, infer_endpoint):
    assert infer_endpoint.context_length() is None  # the fake advertises its context for its own model only
    print("CONTEXT", robustness_context_length)
"""


@pytest.mark.parametrize(
    ("model", "context"), [(GEMMA, GEMMA_LAUNCH.context), (TINY, 2048), ("org/other", DEFAULT_CONTEXT)]
)
def test_a_server_that_advertises_no_context_gets_the_built_in_models_own(pytester, model, context):
    pytester.makepyfile(test_probe=PROBE)
    with FakeServer() as srv:
        result = pytester.runpytest(
            f"--infer-endpoint={srv.base_url}", f"--infer-model={model}", "-p", "no:cacheprovider", "-s", "-W", "ignore"
        )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*CONTEXT {context}*"])
