"""The helpers under the Responses, Messages, reasoning and SDK checks, pinned at their edges.

Whole checks run against a correct fake server cannot tell a helper's exact request
body, its feature name for "unsupported", or the words of its failures from slightly
different ones; these tests name each exactly.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.checks import messages, reasoning, responses, sdk
from pytest_infer.conformance.failures import CheckFailure, Unsupported
from pytest_infer.testing.fakeserver import MODEL, Deviation, FakeServer, error_body

from .deviations import answer_when, answers, compose, on_response, posted

PINNED = "resp_pinned"


def _refuse(path: str, status: int, *, stream_only: bool = False) -> Deviation:
    """Answer POSTs to ``path`` (only streamed ones with ``stream_only``) with ``status`` and the error envelope."""
    return compose(
        answer_when(
            lambda p, b: p == path and (not stream_only or b.get("stream") is True),
            status,
            error_body(f"HTTP {status} on purpose"),
        )
    )


def _call(helper: Any, *args: Any, **params: Any) -> Any:
    with answers():
        return helper(*args, **params)


# --- request bodies ------------------------------------------------------------
def test_messages_body_is_the_exact_anthropic_request(ctx: conformance.CheckContext) -> None:
    """Anthropic's required names (model, max_tokens, messages), greedy; a param overrides a default."""
    assert messages.body(ctx) == {
        "model": MODEL,
        "max_tokens": messages.LIMIT,
        "messages": messages.ASK,
        "temperature": 0,
    }
    assert messages.body(ctx, max_tokens=3, stop_sequences=["x"]) == {
        "model": MODEL,
        "max_tokens": 3,
        "messages": messages.ASK,
        "temperature": 0,
        "stop_sequences": ["x"],
    }


def test_responses_body_is_the_exact_responses_request(ctx: conformance.CheckContext) -> None:
    """The Responses names (input, max_output_tokens) and ``stream: false`` said outright."""
    want = {
        "model": MODEL,
        "input": responses.INPUT,
        "max_output_tokens": responses.LIMIT,
        "temperature": 0,
        "stream": False,
    }
    assert responses.body(ctx) == want
    assert responses.body(ctx, store=True, max_output_tokens=32) == {
        **want,
        "max_output_tokens": 32,
        "store": True,
    }


# --- create(): what it sends, its feature, its failure ----------------------------
@pytest.mark.parametrize(
    ("module", "params"),
    [(messages, {"max_tokens": 5}), (responses, {"max_output_tokens": 5})],
    ids=["messages", "responses"],
)
def test_create_posts_the_body_and_returns_the_json(
    module: Any, params: dict, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """``create`` posts ``body(**params)`` as JSON to its path and hands back the parsed answer."""
    ex, data = _call(module.create, ctx, **params)
    assert posted(fake, module.PATH) == [module.body(ctx, **params)]
    assert (
        ex.path == module.PATH
        and ex.status == 200
        and data is ex.data
        and isinstance(data.get("id"), str)
    )


@pytest.mark.parametrize(
    ("module", "feature"),
    [(messages, "messages"), (responses, "responses")],
    ids=["messages", "responses"],
)
def test_create_refused_is_unsupported_under_its_feature(
    module: Any, feature: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A refusal is reported against the feature ``needs=`` names, so the report groups it right."""
    fake.set_deviation(_refuse(module.PATH, 501))
    with pytest.raises(Unsupported) as info:
        module.create(ctx)
    assert info.value.feature == feature
    assert str(info.value.msg).startswith(
        f"unsupported: {feature}: the server refuses it: HTTP 501"
    )


@pytest.mark.parametrize(
    ("module", "what"),
    [(messages, "POST /v1/messages"), (responses, "POST /v1/responses")],
    ids=["messages", "responses"],
)
def test_create_broken_fails_naming_the_request(
    module: Any, what: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A 500 is a failure whose 'expected' names the request that got it."""
    fake.set_deviation(_refuse(module.PATH, 500))
    with pytest.raises(CheckFailure) as info:
        _call(module.create, ctx)
    assert info.value.expected == f"HTTP 200 for {what}"
    assert info.value.got.startswith("HTTP 500: ")


# --- Responses streams ------------------------------------------------------------
def test_responses_stream_returns_the_typed_events(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The stream is the body with stream: true, read without a [DONE] terminator."""
    ex, events = _call(responses._stream, ctx)
    assert posted(fake, responses.PATH) == [{**responses.body(ctx), "stream": True}]
    assert events[0]["type"] == "response.created" and events[-1]["type"] in responses.TERMINAL
    assert not ex.sse.problems


def test_responses_stream_refused_is_unsupported_responses(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Refusing only the streamed form still marks the Responses API unsupported."""
    fake.set_deviation(_refuse(responses.PATH, 400, stream_only=True))
    with pytest.raises(Unsupported) as info:
        responses._stream(ctx)
    assert info.value.feature == "responses"


def test_responses_stream_broken_fails_naming_the_stream(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(_refuse(responses.PATH, 500, stream_only=True))
    with pytest.raises(CheckFailure) as info:
        _call(responses._stream, ctx)
    assert info.value.expected == "HTTP 200 for a streamed response"


# --- stored responses ---------------------------------------------------------------
def _pinned(get_status: int | None) -> Deviation:
    """Created responses get the id ``resp_pinned``; GETting it answers ``get_status`` (None: the server's own 404)."""

    def request(path: str, body: dict):
        if get_status is not None and path == f"{responses.PATH}/{PINNED}":
            return get_status, error_body(f"HTTP {get_status} on purpose")
        return None

    pin = on_response(lambda p, b, r: r.update(id=PINNED), path=responses.PATH)
    return compose(Deviation(request=request, response=pin.response))


def test_stored_creates_with_store_true_and_gets_it_by_id(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """``store: true`` is sent (not left to the default), and the GET is for the created id."""
    created, ex, got = _call(responses._stored, ctx)
    assert posted(fake, responses.PATH) == [responses.body(ctx, store=True)]
    assert fake.requests[-1] == ("GET", f"{responses.PATH}/{created['id']}", None)
    assert (
        ex.path == f"{responses.PATH}/{created['id']}"
        and got["id"] == created["id"]
        and got is ex.data
    )


def test_stored_get_refused_is_unsupported_store(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A server that creates but will not retrieve lacks storage, not the Responses API."""
    fake.set_deviation(_pinned(404))
    with pytest.raises(Unsupported) as info:
        responses._stored(ctx)
    assert info.value.feature == "responses_store"
    assert fake.requests[-1] == ("GET", f"{responses.PATH}/{PINNED}", None)


def test_stored_get_broken_fails_naming_the_id(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(_pinned(500))
    with pytest.raises(CheckFailure) as info:
        _call(responses._stored, ctx)
    assert info.value.expected == f"HTTP 200 for GET /v1/responses/{PINNED} of a stored response"


# --- pure readers ----------------------------------------------------------------------
def test_output_text_joins_parts_without_separator() -> None:
    """As the SDK's ``output_text``: every output_text part of every message, concatenated."""
    first = {
        "type": "message",
        "content": [{"type": "output_text", "text": "ab"}, {"type": "output_text", "text": "c"}],
    }
    second = {"type": "message", "content": [{"type": "output_text", "text": "d"}]}
    assert responses.output_text({"output": [first, second]}) == "abcd"


def test_text_of_joins_blocks_without_separator() -> None:
    m = {
        "content": [
            {"type": "text", "text": "ab"},
            {"type": "tool_use", "id": "t"},
            {"type": "text", "text": "c"},
        ]
    }
    assert messages.text_of(m) == "abc"


def _response(*output: Any) -> dict[str, Any]:
    return {
        "object": "response",
        "id": "resp_1",
        "created_at": 1,
        "status": "completed",
        "incomplete_details": None,
        "output": list(output),
    }


MESSAGE = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "hi"}],
}


def test_problems_look_only_at_message_items() -> None:
    """Reasoning items (no role) sit beside the message in real outputs and are no problem; alone they are no
    message."""
    reasoning_item = {"type": "reasoning", "id": "rs_1", "summary": []}
    assert responses._problems(_response(reasoning_item, MESSAGE)) == []
    assert responses._problems(_response(reasoning_item)) == [
        f"output has no message item: {[reasoning_item]!r}"
    ]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0, True),
        (7, True),
        (-1, False),
        (True, False),
        (False, False),
        (1.5, False),
        (0.0, False),
        (None, False),
    ],
)
def test_count_is_a_non_negative_int_not_a_bool(value: Any, ok: bool) -> None:
    """Token counts may be 0 (an empty prompt, nothing generated); a bool or float is not a count."""
    assert messages._count(value) is ok


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        (
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
            },
            [],
        ),
        (
            {"error": {"type": "invalid_request_error", "message": "m"}},
            ['the body is not {"type": "error", "error": {...}}'],
        ),
        ({"type": "error", "error": "m"}, ['the body is not {"type": "error", "error": {...}}']),
        (None, ['the body is not {"type": "error", "error": {...}}']),
        (
            {"type": "error", "error": {"type": "", "message": 3}},
            ["error.type is not a non-empty string", "error.message is not a non-empty string"],
        ),
    ],
    ids=["anthropic", "openai-envelope", "error-not-object", "no-body", "empty-fields"],
)
def test_anthropic_error_problems_exact(data: Any, problems: list[str]) -> None:
    """The words shown when the error body is not Anthropic's shape."""
    assert messages.anthropic_error_problems(data) == problems


def test_named_keeps_only_non_empty_reasoning_fields() -> None:
    """Either name counts when it carries something; an empty one (vLLM sends both) does not, nor does content."""
    assert reasoning._named(
        {"reasoning": "think", "reasoning_content": "", "content": "answer"}
    ) == {"reasoning": "think"}
    assert reasoning._named({"reasoning": None, "reasoning_content": "t"}) == {
        "reasoning_content": "t"
    }


# --- SDK helpers -----------------------------------------------------------------------
def test_sdk_error_keeps_the_curl_line(ctx: conformance.CheckContext) -> None:
    """An SDK exception is reported with the curl line that reproduces the raw request."""
    with pytest.raises(CheckFailure) as info:
        sdk._sdk_error(ctx, ValueError("boom"), "a chat completion", "curl -sS http://x")
    failure = info.value
    assert (failure.expected, failure.got, failure.curl) == (
        "the SDK to consume a chat completion",
        "ValueError: boom",
        "curl -sS http://x",
    )


def test_greedy_text_of_a_null_content_is_empty(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """No content compares as "" with what the SDK yields (its stream joins to "")."""
    fake.set_deviation(
        compose(on_response(lambda p, b, r: r["choices"][0]["message"].update(content=None)))
    )
    text, data, curl = _call(sdk._greedy_text, ctx)
    assert text == "" and data["choices"][0]["message"]["content"] is None
    assert curl.startswith("curl -sS") and "/v1/chat/completions" in curl
