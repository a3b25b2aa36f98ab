"""What a real model's text leaves unjudged: a check that met nothing to judge is inconclusive, never a pass.

The built-in ``tiny`` model writes gibberish of near-uniform probability that always runs to the token limit, so
these cases never arose on it; a real model (Gemma 3 270M) is sure of its next words and may end by itself.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.failures import CheckFailure
from pytest_infer.models import registry
from pytest_infer.models.gemma import GEMMA
from pytest_infer.outcomes import Inconclusive, NotExercised
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

from .deviations import BASE, CHAT, SAMPLES_NOTHING, _choice, answer_when, compose, on_response
from .proofs import MUTATIONS


def _ends_early(path: str, body: dict, response: dict) -> None:
    """The model writes its end token after 2 tokens: a short, complete answer under any limit."""
    choice = _choice(response)
    choice["message"]["content"] = choice["message"]["content"][:2]
    choice["finish_reason"] = "stop"
    usage = response["usage"]
    usage.update(completion_tokens=2, total_tokens=usage["prompt_tokens"] + 2)


def test_a_seed_without_effect_is_inconclusive(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Two equal answers for one seed show the seed works only if another seed answers otherwise: a model sure of its
    words, or a server that samples nothing (transformers serve 5.24.0), answers the same under every seed."""
    fake.set_deviation(compose(SAMPLES_NOTHING))
    with pytest.raises(Inconclusive, match="seed 4243 gave the same text as seed 4242"):
        conformance.run("chat.seed", ctx)


@pytest.mark.parametrize("check_id", ["chat.max-tokens", "chat.max-completion-tokens"])
def test_a_limit_never_reached_is_inconclusive(
    check_id: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """An answer that ended by itself before the limit says nothing of what a server does at the limit."""
    fake.set_deviation(compose(on_response(_ends_early)))
    with pytest.raises(Inconclusive, match="ended by itself after 2 of 5 tokens"):
        conformance.run(check_id, ctx)


def test_an_answer_without_a_wide_character_is_inconclusive(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Logprobs of characters made of several tokens are judged only on an answer that has some."""
    fake.set_deviation(
        compose(on_response(lambda p, b, r: _choice(r)["message"].update(content="plain ascii")))
    )
    with pytest.raises(Inconclusive, match="no non-ASCII character in the answer"):
        conformance.run("chat.logprobs-multibyte", ctx)


def _bytes_null(which: Callable[[int], bool]) -> Deviation:
    """The logprobs entries ``which(i)`` picks have ``bytes: null`` (the OpenAI API allows it for a token without
    a bytes representation)."""

    def change(p: str, b: dict, r: dict) -> None:
        if b.get("logprobs") and _choice(r).get("logprobs"):
            for i, entry in enumerate(_choice(r)["logprobs"]["content"]):
                if which(i):
                    entry["bytes"] = None

    return compose(on_response(change))


def test_a_null_bytes_entry_leaves_the_others_judged(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """One entry without bytes stands for any bytes; the others still join around it to the content's UTF-8."""
    fake.set_deviation(_bytes_null(lambda i: i == 0))
    said = conformance.run("chat.logprobs-multibyte", ctx)
    assert (
        "their bytes joining to its UTF-8 (11 of 12 entries with bytes, the others null)" in said
    ), said


def test_logprobs_whose_bytes_are_all_null_are_inconclusive(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """No entry's bytes to judge: the bytes half of the check is not earned, so it is no pass."""
    fake.set_deviation(_bytes_null(lambda i: True))
    with pytest.raises(Inconclusive, match="every logprobs entry has bytes: null"):
        conformance.run("chat.logprobs-multibyte", ctx)


def test_a_stream_without_a_wide_character_is_inconclusive(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Half a character in a delta shows only on an answer that has characters of several tokens."""
    fake.set_deviation(
        compose(on_response(lambda p, b, r: _choice(r)["message"].update(content="plain ascii")))
    )
    with pytest.raises(Inconclusive, match="no non-ASCII character in the answer"):
        conformance.run("stream.multibyte-text", ctx)


ROLES_MUST_ALTERNATE = (
    answer_when(  # what vLLM and SGLang answer when Gemma 3's template meets a tool turn
        lambda p, b: p == CHAT and any(m.get("role") == "tool" for m in b.get("messages") or []),
        400,
        error_body("Conversation roles must alternate user/assistant/user/assistant/..."),
    )
)
TEMPLATE_ERROR_500 = answer_when(  # transformers serve 5.24.0 on the same turn
    lambda p, b: p == CHAT and any(m.get("role") == "tool" for m in b.get("messages") or []),
    500,
    "Internal Server Error",
)


def test_a_tool_turn_refused_for_a_model_without_a_tool_role_judges_nothing(ctx, fake) -> None:
    """gemma-3-270m's template has no tool role, so every engine must refuse the turn: that refusal is not the
    server's failure; the same refusal for a model taken at its word is, and a 5xx is for either."""
    fake.set_deviation(compose(ROLES_MUST_ALTERNATE))
    with pytest.raises(CheckFailure, match="HTTP 200 for a conversation with a tool result"):
        conformance.run("tools.result-message", ctx)
    ctx.no_tools = GEMMA.without_tools
    with pytest.raises(
        NotExercised, match="no tool role: the tool turn was refused \\(HTTP 400\\)"
    ):
        conformance.run("tools.result-message", ctx)
    fake.set_deviation(compose(TEMPLATE_ERROR_500))
    with pytest.raises(CheckFailure, match="HTTP 500"):
        conformance.run("tools.result-message", ctx)
    fake.set_deviation(BASE)
    assert conformance.run("tools.result-message", ctx).startswith(
        "a turn after a tool result answered with text"
    )


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (400, "unknown field: tool_call_id"),
        (422, "messages.2.role: Input should be 'user', 'assistant' or 'system'"),
        (404, "The model `fake-model` does not exist."),
    ],
    ids=["other-400", "validation-422", "no-model-404"],
)
def test_a_tool_turn_refused_for_another_reason_fails_on_a_model_without_a_tool_role(
    ctx, fake, status, said
) -> None:
    """Only the template's own refusal is the model's: any other 4xx is the server's, judged as on any model."""
    fake.set_deviation(
        compose(
            answer_when(
                lambda p, b: (
                    p == CHAT and any(m.get("role") == "tool" for m in b.get("messages") or [])
                ),
                status,
                error_body(said),
            )
        )
    )
    ctx.no_tools = GEMMA.without_tools
    try:
        conformance.run("tools.result-message", ctx)
    except NotExercised as exc:  # a skip: pytest.raises would let it pass as skipped
        pytest.fail(f"a {status} that is not the template's refusal was excused: {exc}")
    except CheckFailure as failure:
        assert f"HTTP {status}" in str(failure), str(failure)
    else:
        pytest.fail(f"HTTP {status} to the tool turn passed")


def test_no_call_under_auto_from_a_model_never_taught_tools_judges_nothing(ctx, fake) -> None:
    """auto leaves the call to the model: a base model's text answer shows nothing of the server's parser, while a
    call it does make is judged as any other."""
    fake.set_deviation(compose(MUTATIONS["tools.auto"]))
    with pytest.raises(CheckFailure, match="a get_weather call"):
        conformance.run("tools.auto", ctx)
    ctx.no_tools = GEMMA.without_tools
    with pytest.raises(
        NotExercised, match="answered without a call, and auto leaves the call to it"
    ):
        conformance.run("tools.auto", ctx)
    fake.set_deviation(BASE)
    assert conformance.run("tools.auto", ctx).startswith("tool_choice 'auto' and no tool_choice")


def test_the_gemma_folder_a_server_serves_is_the_model_without_tools() -> None:
    """transformers serve names its model by the cached folder: it is still gemma-3-270m."""
    assert registry.builtin("/cache/models/gemma-3-270m-bf16-fa6c9653d65e") is GEMMA
    assert GEMMA.without_tools is not None and registry.builtin("org/some-model") is None
    assert all(
        builtin.without_tools is None for builtin in registry.BUILTINS if builtin is not GEMMA
    )
