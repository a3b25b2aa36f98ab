"""What a real model's text leaves unjudged: a check that met nothing to judge is inconclusive, never a pass.

The built-in ``tiny`` model writes gibberish of near-uniform probability that always runs to the token limit, so
these cases never arose on it; a real model (Gemma 3 270M) is sure of its next words and may end by itself.
"""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import Inconclusive
from pytest_infer.testing.fakeserver import FakeServer

from .deviations import SAMPLES_NOTHING, _choice, compose, on_response


def _ends_early(path: str, body: dict, response: dict) -> None:
    """The model writes its end token after 2 tokens: a short, complete answer under any limit."""
    choice = _choice(response)
    choice["message"]["content"] = choice["message"]["content"][:2]
    choice["finish_reason"] = "stop"
    usage = response["usage"]
    usage.update(completion_tokens=2, total_tokens=usage["prompt_tokens"] + 2)


def test_a_seed_without_effect_is_inconclusive(ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """Two equal answers for one seed show the seed works only if another seed answers otherwise: a model sure of its
    words, or a server that samples nothing (transformers serve 5.24.0), answers the same under every seed."""
    fake.set_deviation(compose(SAMPLES_NOTHING))
    with pytest.raises(Inconclusive, match="seed 4243 gave the same text as seed 4242"):
        conformance.run("chat.seed", ctx)


@pytest.mark.parametrize("check_id", ["chat.max-tokens", "chat.max-completion-tokens"])
def test_a_limit_never_reached_is_inconclusive(check_id: str, ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """An answer that ended by itself before the limit says nothing of what a server does at the limit."""
    fake.set_deviation(compose(on_response(_ends_early)))
    with pytest.raises(Inconclusive, match="ended by itself after 2 of 5 tokens"):
        conformance.run(check_id, ctx)


def test_an_answer_without_a_wide_character_is_inconclusive(ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """Logprobs of characters made of several tokens are judged only on an answer that has some."""
    fake.set_deviation(compose(on_response(lambda p, b, r: _choice(r)["message"].update(content="plain ascii"))))
    with pytest.raises(Inconclusive, match="no non-ASCII character in the answer"):
        conformance.run("chat.logprobs-multibyte", ctx)


def test_a_stream_without_a_wide_character_is_inconclusive(ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """Half a character in a delta shows only on an answer that has characters of several tokens."""
    fake.set_deviation(compose(on_response(lambda p, b, r: _choice(r)["message"].update(content="plain ascii"))))
    with pytest.raises(Inconclusive, match="no non-ASCII character in the answer"):
        conformance.run("stream.multibyte-text", ctx)
