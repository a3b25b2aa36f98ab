"""The context the robustness suite's over-context and long-stream requests are sized by, on a server that does not
advertise one (transformers serve): a built-in model's own, not 131072 tokens that a CPU would take an hour to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_infer.models.gemma import GEMMA
from pytest_infer.models.tiny import TINY
from pytest_infer.robustness.kit import DEFAULT_CONTEXT
from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation, FakeServer

SUITES = Path(__file__).resolve().parents[2] / "suites"
# the fake's model listed without the context it advertises (transformers serve lists none)
NO_CONTEXT = (
    200,
    {
        "object": "list",
        "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}],
    },
)

PROBE = """
def test_context(robustness_context_length, infer_endpoint):
    assert infer_endpoint.context_length() is None  # listed without one
    print("CONTEXT", robustness_context_length)
"""


@pytest.mark.parametrize(
    ("model", "context"),
    [(GEMMA.name, GEMMA.context), (TINY.name, 2048), ("org/other", DEFAULT_CONTEXT)],
)
def test_a_server_that_advertises_no_context_gets_the_built_in_models_own(pytester, model, context):
    pytester.makepyfile(test_probe=PROBE)
    with FakeServer(
        Deviation(request=lambda path, body: NO_CONTEXT if path == "/v1/models" else None)
    ) as srv:
        result = pytester.runpytest(
            f"--infer-endpoint={srv.base_url}",
            f"--infer-model={model}",
            "-p",
            "no:cacheprovider",
            "-s",
            "-W",
            "ignore",
        )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*CONTEXT {context}*"])


def _a_longer_context(served: int) -> Deviation:
    """A server running the model at ``served`` tokens of context that advertises none (transformers serve runs
    gemma-3-270m at its own 32768): a chat prompt of up to ``served`` characters (one token each) is answered."""

    def request(path: str, body: dict):
        if path == "/v1/models":
            return NO_CONTEXT
        prompt = "".join(
            str(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict)
        )
        if (
            path != "/v1/chat/completions"
            or body.get("stream")
            or not CONTEXT_LENGTH < len(prompt) <= served
        ):
            return None
        return 200, {
            "id": "chatcmpl-long", "object": "chat.completion", "created": 1_700_000_000, "model": MODEL,
            "choices": [{
                "index": 0, "message": {"role": "assistant", "content": "ok"}, "logprobs": None,
                "finish_reason": "stop",
            }],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1, "total_tokens": len(prompt) + 1},
        }  # fmt: skip

    return Deviation(request=request)


@pytest.mark.parametrize("suite", ["robustness", "security"])
def test_an_assumed_context_judges_no_refusal_on_a_server_not_launched_with_it(pytester, suite):
    """gemma-3-270m's context is 2048 only where the plugin launched the engine with it: behind an endpoint that
    advertises none, a prompt of 2112 tokens may be well inside the server's own (transformers serve: 32768), and
    calling its answer 'a prompt over the context accepted' was a false [critical]. Not judged: inconclusive, why
    named."""
    with FakeServer(_a_longer_context(32768)) as srv:
        selected = (
            "prompt_over_context and not streaming and not completions"
            if suite == "robustness"
            else "over_the"
        )
        pytester.runpytest(
            str(SUITES / suite), "-m", suite, f"--infer-endpoint={srv.base_url}", f"--infer-model={GEMMA.name}",
            "--infer-request-timeout=20", "-p", "no:cacheprovider", "--infer-report-dir=report", "-k", selected,
        )  # fmt: skip
    tests = json.loads((pytester.path / "report" / "results.json").read_text())["tests"]
    assert [(t["outcome"]) for t in tests] == ["inconclusive"], [
        (t["outcome"], t["message"]) for t in tests
    ]
    message = tests[0]["message"]
    assert "an endpoint the plugin did not launch advertises no context in /v1/models" in message, (
        message
    )
