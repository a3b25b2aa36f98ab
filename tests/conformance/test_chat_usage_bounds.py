"""chat.usage and chat.usage-details on valid answers a correct fake server never gives: counts at their bounds
(nothing generated, a one-token prompt, a whole prompt cached, every completion token a reasoning one) and
completion details that leave out reasoning_tokens."""

from __future__ import annotations

from collections.abc import Callable

from pytest_infer import conformance
from pytest_infer.testing.fakeserver import FakeServer

from .deviations import answers, compose, on_response


def _usage(change: Callable[[dict], None]) -> Callable[[str, dict, dict], None]:
    """A chat answer whose usage ``change`` rewrites, its total kept the sum of the two counts."""

    def rewrite(p: str, b: dict, r: dict) -> None:
        usage = r["usage"]
        change(usage)
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]

    return rewrite


def test_usage_with_no_completion_tokens_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A model that ends at once generates nothing: zero completion tokens is a count, not a missing one."""
    fake.set_deviation(compose(on_response(_usage(lambda u: u.update(completion_tokens=0)))))
    with answers():
        conformance.run("chat.usage", ctx)


def test_usage_with_a_one_token_prompt_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A prompt may be a single token: the check asks only that some prompt was counted."""
    fake.set_deviation(compose(on_response(_usage(lambda u: u.update(prompt_tokens=1)))))
    with answers():
        conformance.run("chat.usage", ctx)


def test_usage_details_with_the_whole_prompt_cached_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A cache may hold every prompt token: cached_tokens equal to prompt_tokens is within the total."""
    fake.set_deviation(
        compose(
            on_response(
                _usage(
                    lambda u: u.update(prompt_tokens_details={"cached_tokens": u["prompt_tokens"]})
                )
            )
        )
    )
    with answers():
        conformance.run("chat.usage-details", ctx)


def test_usage_details_with_a_one_token_cache_hit_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Any cached token on the repeated prompt shows the cache working; one is enough."""
    fake.set_deviation(
        compose(on_response(_usage(lambda u: u.update(prompt_tokens_details={"cached_tokens": 1}))))
    )
    with answers():
        conformance.run("chat.usage-details", ctx)


def test_usage_details_with_every_completion_token_reasoning_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A reasoning model cut off by max_tokens may spend all of its completion thinking: reasoning_tokens equal to
    completion_tokens is within the total."""
    fake.set_deviation(
        compose(
            on_response(
                _usage(
                    lambda u: u.update(
                        completion_tokens_details={"reasoning_tokens": u["completion_tokens"]}
                    )
                )
            )
        )
    )
    with answers():
        conformance.run("chat.usage-details", ctx)


def test_usage_details_without_reasoning_tokens_and_nothing_generated_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """completion_tokens_details may carry only other counts: a missing reasoning_tokens is none reasoned, which
    fits even a completion of zero tokens."""
    fake.set_deviation(
        compose(
            on_response(
                _usage(
                    lambda u: u.update(
                        completion_tokens=0,
                        completion_tokens_details={"accepted_prediction_tokens": 0},
                    )
                )
            )
        )
    )
    with answers():
        conformance.run("chat.usage-details", ctx)
