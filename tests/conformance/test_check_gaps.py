"""Outcomes other than a failure that the branch tables cannot pin: which feature a refusal names, a refusal
that counts as an answer, and the reason a check meets nothing to judge."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import NotExercised, Unsupported
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

from .deviations import COMPLETIONS, answer_when, answers, compose

EMBEDDINGS = "/v1/embeddings"


def _refusing(param: str, when: Callable[[dict], bool]) -> Deviation:
    return answer_when(
        lambda p, b: p == COMPLETIONS and when(b),
        400,
        error_body(f"{param} is not supported", param=param),
    )


# a server that serves plain completions and refuses one parameter: the check names that parameter, not completions
REFUSED_ALONE = [
    pytest.param(
        "completions.prompt-list-n",
        "prompt_list",
        _refusing("prompt", lambda b: isinstance(b.get("prompt"), list)),
        id="prompt_list",
    ),
    pytest.param("completions.prompt-list-n", "n", _refusing("n", lambda b: "n" in b), id="n"),
    pytest.param("completions.echo", "echo", _refusing("echo", lambda b: "echo" in b), id="echo"),
    pytest.param(
        "completions.logprobs",
        "logprobs",
        _refusing("logprobs", lambda b: "logprobs" in b),
        id="logprobs",
    ),
]


@pytest.mark.parametrize(("check_id", "feature", "deviation"), REFUSED_ALONE)
def test_a_refused_parameter_is_the_unsupported_feature(
    check_id: str,
    feature: str,
    deviation: Deviation,
    ctx: conformance.CheckContext,
    fake: FakeServer,
) -> None:
    """The report lists what a server lacks by feature; a refusal filed under another one misleads its reader."""
    fake.set_deviation(compose(deviation))
    with pytest.raises(Unsupported) as info:
        conformance.run(check_id, ctx)
    assert info.value.feature == feature
    assert info.value.msg.startswith(
        f"unsupported: {feature}: the server refuses it: HTTP 400: "
    ), info.value.msg


@pytest.mark.parametrize("status", [400, 422])
def test_dimensions_refused_with_400_or_422_is_an_answer(
    status: int, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A server that cannot shorten vectors may say so (400, or FastAPI's 422); only ignoring ``dimensions`` is
    wrong."""
    refusal = error_body("dimensions is not supported by this model", param="dimensions")
    fake.set_deviation(
        compose(answer_when(lambda p, b: p == EMBEDDINGS and "dimensions" in b, status, refusal))
    )
    with (
        answers()
    ):  # through the registry's wrapper: a give-up (a skip) or a pass without evidence fails here
        evidence = conformance.run("embeddings.dimensions", ctx)
    assert evidence == f"dimensions=8 refused with HTTP {status}; 16 values without it"


def test_no_reasoning_is_not_exercised_and_says_why(ctx: conformance.CheckContext) -> None:
    """The reason is what a user reads to tell a server without a reasoning parser from a model that does not reason."""
    with pytest.raises(NotExercised) as info:
        conformance.run("chat.reasoning", ctx)
    assert (
        info.value.msg
        == "not exercised: no reasoning in the answer or its stream (no reasoning parser, or a model that does not"
        " reason)"
    )
