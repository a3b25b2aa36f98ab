"""A declaration excuses its own failure and no other: the check goes on past it, a later failure nothing excuses fails
it, a failure of the request the excused one already showed wrong follows from it, and the bundled declarations still
end their checks as excused on servers that deviate as the engines they name do."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_infer import conformance
from pytest_infer.testing.fakeserver import MESSAGES, MODEL, Deviation, FakeServer

from .deviations import CHAT, COMPLETIONS, answer_when, canned_chat, compose, on_response

DECLARED = "the chat answer's object is v2 here (fake 1.0); see https://example.org/1"


def _excuse_matching(
    pattern: str, declaration: str = DECLARED
) -> Callable[[conformance.CheckFailure], str | None]:
    import re

    return lambda failure: declaration if re.search(pattern, failure.judged) else None


@pytest.fixture
def two_requests() -> Iterator[str]:
    """A check of two requests: the chat answer's object (which the fake always gets "wrong"), then the completion's."""

    def check(ctx: conformance.CheckContext) -> str:
        chat = ctx.chat(max_tokens=4)
        ctx.expect(
            chat.data["object"] == "chat.completion.v2",
            "object 'chat.completion.v2'",
            chat.data["object"],
            chat,
        )
        ctx.expect(
            chat.data["choices"][0]["index"] == 7, "index 7", chat.data["choices"][0]["index"], chat
        )
        completion = ctx.completion(max_tokens=4)
        ctx.expect(
            completion.data["object"] == "text_completion",
            "object 'text_completion'",
            completion.data["object"],
            completion,
        )
        return "the chat answer's and the completion's object"

    conformance.REGISTRY.check("test.two-requests", "two requests, each judged", reference="test")(
        check
    )
    yield "test.two-requests"
    conformance.REGISTRY.unregister("test.two-requests")


def test_the_declared_failure_alone_is_excused_and_named(
    two_requests: str, ctx: conformance.CheckContext
) -> None:
    with pytest.raises(conformance.DeclaredDeviation) as info:
        conformance.run(two_requests, ctx, _excuse_matching("chat.completion.v2"))
    text = str(info.value)
    assert text.startswith(
        "[test.two-requests] two requests, each judged (error)\nexpected: object 'chat.completion.v2'"
    )
    assert f"known deviation: {DECLARED}" in text
    # the second failure judged the same answer: it follows from the first, and says so
    assert "following from it, on the same request: expected: index 7" in text
    assert info.value.curl.startswith("curl -sS") and CHAT in info.value.curl


def test_a_later_undeclared_failure_fails_the_check(
    two_requests: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Before, the check ended at the declared failure, so this one was never seen: xfail stayed xfail."""
    fake.set_deviation(
        compose(on_response(lambda p, b, r: r.update(object="completion"), COMPLETIONS))
    )
    with pytest.raises(conformance.CheckFailure) as info:
        conformance.run(two_requests, ctx, _excuse_matching("chat.completion.v2"))
    assert not isinstance(info.value, conformance.DeclaredDeviation)
    text = str(info.value)
    assert (
        "expected: object 'text_completion'\ngot:      completion" in text and COMPLETIONS in text
    )
    assert (
        "after 2 excused failure(s) of the same check, the first: expected: object 'chat.completion.v2'"
        in text
    )


def test_without_declarations_the_first_failure_ends_the_check(
    two_requests: str, ctx: conformance.CheckContext
) -> None:
    with pytest.raises(conformance.CheckFailure, match="chat.completion.v2") as info:
        conformance.run(two_requests, ctx)
    assert "index 7" not in str(info.value) and not isinstance(
        info.value, conformance.DeclaredDeviation
    )


def test_a_declared_deviation_gone_is_a_pass(
    two_requests: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The suite shows that pass as FIXED (its xfail is not strict)."""
    fake.set_deviation(
        compose(
            on_response(
                lambda p, b, r: (
                    r.update(object="chat.completion.v2"),
                    r["choices"][0].update(index=7),
                )
            )
        )
    )
    assert conformance.run(two_requests, ctx, _excuse_matching("chat.completion.v2")).startswith(
        "the chat answer's"
    )


def test_what_cannot_go_on_past_an_excused_failure_stays_excused(
    ctx: conformance.CheckContext,
) -> None:
    def check(ctx: conformance.CheckContext) -> str:
        ex = ctx.chat(max_tokens=4)
        ctx.expect(ex.status == 404, "HTTP 404", ex.status, ex)
        return ex.data["error"][
            "message"
        ]  # the answer the excused failure showed wrong has no error

    conformance.REGISTRY.check(
        "test.crash-after", "a crash after an excused failure", reference="test"
    )(check)
    try:
        with pytest.raises(
            conformance.DeclaredDeviation, match="could not go on past it: KeyError: 'error'"
        ):
            conformance.run("test.crash-after", ctx, _excuse_matching("HTTP 404"))
    finally:
        conformance.REGISTRY.unregister("test.crash-after")


def _flat_errors(path: str, status: int, body: Any) -> Any:
    """SGLang's non-streamed error body: no "error" envelope, the HTTP status as an integer code."""
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict) or path == MESSAGES:
        return body
    return {
        "object": "error",
        "message": inner.get("message"),
        "type": "BadRequestError",
        "param": None,
        "code": status,
    }


def _openai_envelope_on_messages(path: str, status: int, body: Any) -> Any:
    """vLLM's request-validation errors on /v1/messages: the OpenAI envelope."""
    if path == MESSAGES and isinstance(body, dict) and body.get("type") == "error":
        return {
            "error": {
                "message": body["error"]["message"],
                "type": "Bad Request",
                "param": None,
                "code": 400,
            }
        }
    return body


def _any_model(p: str, body: dict) -> bool:
    return p == CHAT and body.get("model") not in (MODEL, None)


ENGINE_LIKE: dict[tuple[str, str, str], Deviation] = {
    # any model name answered, echoed back: the status is declared, the missing envelope follows from it
    ("sglang", "0.5.23", "errors.unknown-model"): answer_when(
        _any_model, 200, {**canned_chat(), "model": "no-such-model-pytest-infer"}
    ),
    ("sglang", "0.5.23", "sdk.errors"): answer_when(_any_model, 200, canned_chat()),
    # the flat error body: the check cannot read error.param of it, and stops there
    ("sglang", "0.5.23", "errors.envelope-types"): Deviation(error=_flat_errors),
    ("sglang", "0.5.23", "errors.envelope"): Deviation(error=_flat_errors),
    # 404 {"detail": "Not Found"}: the missing model card follows from it
    ("vllm", "0.32.0", "models.retrieve"): answer_when(
        lambda p, b: p.startswith("/v1/models/"), 404, {"detail": "Not Found"}
    ),
    ("vllm", "0.32.0", "messages.errors"): Deviation(error=_openai_envelope_on_messages),
}


@pytest.mark.parametrize(("framework", "version", "check_id"), sorted(ENGINE_LIKE))
def test_the_bundled_declarations_still_excuse_what_they_name(
    framework: str, version: str, check_id: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Going on past a declared failure must not turn it into a failure of what follows from it."""
    expectations = conformance.load_expectations([], [c.id for c in conformance.REGISTRY])
    fake.set_deviation(compose(ENGINE_LIKE[(framework, version, check_id)]))

    def excuse(failure: conformance.CheckFailure) -> str | None:
        entry = expectations.judge(check_id, framework, version, failure.judged).entry
        return None if entry is None else entry.describe()

    with pytest.raises(conformance.DeclaredDeviation) as info:
        conformance.run(check_id, ctx, excuse)
    assert "known deviation: " in str(info.value)
