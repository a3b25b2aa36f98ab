"""The helpers under the tools, models, embeddings, errors and tokenize checks, pinned at their edges.

Whole checks run against a correct fake server never show a helper's exact problem strings,
its request body, its feature name for "unsupported", or its retry decision; these tests
name each exactly. A helper that skips (Unsupported, Inconclusive) where it should answer
must fail here, not skip, so calls that must answer run under ``answers()``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.checks.embeddings import embed, plain
from pytest_infer.conformance.checks.errors import _overflow_prompt
from pytest_infer.conformance.checks.models import _card_problems
from pytest_infer.conformance.checks.tokenize import _token_ids
from pytest_infer.conformance.checks.tools import (
    ASK,
    PARALLEL_ASK,
    TIME,
    WEATHER,
    assemble,
    call_problems,
    forced_call,
    no_call,
    tool_request,
)
from pytest_infer.conformance.failures import CheckFailure, Unsupported
from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation, FakeServer, error_body

from .deviations import CHAT, answer_when, answers, compose, posted

EMBEDDINGS = "/v1/embeddings"
INPUT = ["hello world", "good night"]


def _answer(path: str, status: int) -> Deviation:
    return compose(
        answer_when(lambda p, b: p == path, status, error_body(f"HTTP {status} on purpose"))
    )


def _chat_message(message: dict, finish_reason: str, *, first_only: bool = False) -> Deviation:
    """The chat answer's message and finish_reason replaced (on the first request only, if told)."""
    seen: list[int] = []

    def response(p: str, body: dict, resp: dict) -> dict:
        if p == CHAT and (not first_only or not seen):
            seen.append(1)
            resp["choices"][0].update(message=message, finish_reason=finish_reason)
        return resp

    return compose(Deviation(response=response))


# --- models._card_problems ---------------------------------------------------------
GOOD_CARD = {"id": MODEL, "object": "model", "created": 1_700_000_000, "owned_by": "fakeserver"}


@pytest.mark.parametrize(
    ("card", "problems"),
    [
        (GOOD_CARD, []),
        ("x", ["entry 'x' is not an object"]),
        (GOOD_CARD | {"id": ""}, ["id is not a non-empty string"]),
        (GOOD_CARD | {"id": 5}, ["id is not a non-empty string"]),
        (GOOD_CARD | {"object": "list"}, ["object is 'list', not 'model'"]),
        (GOOD_CARD | {"created": True}, ["created is True, not an integer"]),
        (GOOD_CARD | {"created": "1700000000"}, ["created is '1700000000', not an integer"]),
        (GOOD_CARD | {"owned_by": 7}, ["owned_by is 7, not a string"]),
        (
            {},
            [
                "id is not a non-empty string",
                "object is None, not 'model'",
                "created is None, not an integer",
                "owned_by is None, not a string",
            ],
        ),
    ],
    ids=[
        "good",
        "not-a-dict",
        "empty-id",
        "int-id",
        "object",
        "bool-created",
        "str-created",
        "int-owned_by",
        "empty",
    ],
)
def test_card_problems_name_each_bad_field_with_its_value(
    card: object, problems: list[str]
) -> None:
    """An empty or non-string id, a bool ``created`` (an int to Python, not to typed clients), each quoted as sent."""
    assert _card_problems(card) == problems


# --- tokenize._token_ids ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "ok"),
    [([72, 101], True), ([], False), (["72"], False), ([True], False), ("72", False)],
    ids=["ints", "empty", "strings", "bools", "not-a-list"],
)
def test_token_ids_are_a_non_empty_list_of_true_integers(value: Any, ok: bool) -> None:
    """Ids a client can send back to /detokenize: no empty list, no strings, no JSON booleans."""
    assert _token_ids(value) is ok


# --- tools.call_problems ---------------------------------------------------------------
def _call(**changes: Any) -> dict:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    } | changes


@pytest.mark.parametrize(
    ("calls", "problems"),
    [
        ([_call()], []),
        ([], ["tool_calls is [], not a non-empty list"]),
        (
            ["x"],
            [
                "call 0 has no id",
                "call 0 type is 'x'",
                "call 0 names None, not one of ('get_weather',)",
                "call 0 arguments is NoneType, not a JSON string",
            ],
        ),
        ([_call(id="")], ["call 0 has no id"]),
        ([_call(id=5)], ["call 0 has no id"]),
        ([_call(type="tool")], ["call 0 type is 'tool'"]),
        (
            [_call(function={"name": "get_time", "arguments": "{}"})],
            ["call 0 names 'get_time', not one of ('get_weather',)"],
        ),
        (
            [_call(function={"name": "get_weather", "arguments": {"city": "Paris"}})],
            ["call 0 arguments is dict, not a JSON string"],
        ),
        (
            [_call(function={"name": "get_weather", "arguments": "{"}), _call()],
            ["call 0 arguments '{' is not valid JSON", "duplicate call ids ['call_1', 'call_1']"],
        ),
        (
            [_call(function="get_weather"), _call(id="call_2", type="tool")],
            ["call 0 function is 'get_weather', not an object", "call 1 type is 'tool'"],
        ),
    ],
    ids=[
        "good",
        "empty",
        "not-a-dict",
        "empty-id",
        "int-id",
        "type",
        "name",
        "dict-arguments",
        "json-and-duplicate",
        "function-a-string",
    ],
)
def test_call_problems_quote_what_is_wrong(calls: list, problems: list[str]) -> None:
    """Each problem quotes the value the server sent (type, name, arguments' type), for every call, even a
    non-object."""
    assert call_problems(calls, ("get_weather",)) == problems


# --- tools.assemble ------------------------------------------------------------------------
def _chunks(*fragment_lists: list[dict]) -> list[dict]:
    return [{"choices": [{"index": 0, "delta": {"tool_calls": frags}}]} for frags in fragment_lists]


def test_assemble_joins_arguments_and_accepts_a_repeated_id() -> None:
    """A later fragment may repeat the call's id (some servers do); only a different id is a problem."""
    head = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    calls, problems = assemble(
        _chunks(
            [head],
            [{"index": 0, "function": {"arguments": '{"city"'}}],
            [{"index": 0, "id": "call_1", "function": {"arguments": ': "Paris"}'}}],
        )
    )
    assert problems == []
    assert calls == {
        0: {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    }


def test_assemble_reports_a_changed_id() -> None:
    calls, problems = assemble(
        _chunks(
            [{"index": 0, "id": "call_1", "function": {"name": "get_time"}}],
            [{"index": 0, "id": "call_2", "function": {"arguments": "{}"}}],
        )
    )
    assert problems == ["call 0 changed id from call_1 to call_2"]
    assert calls[0]["id"] == "call_1" and calls[0]["function"]["arguments"] == "{}"


def test_assemble_keeps_the_sent_type_and_defaults_a_missing_one_to_function() -> None:
    """The SDK's accumulator defaults ``type`` to 'function' when the first fragment omits it, and keeps another as
    sent."""
    calls, problems = assemble(
        _chunks(
            [
                {"index": 0, "id": "call_1", "function": {"name": "get_weather"}},
                {"index": 1, "id": "call_2", "type": "custom", "function": {"name": "get_time"}},
            ]
        )
    )
    assert problems == []
    assert [calls[0]["type"], calls[1]["type"]] == ["function", "custom"]


def test_assemble_skips_a_fragment_without_integer_index_and_reads_on() -> None:
    """A bad fragment is reported and passed over; the good fragment after it in the same delta still counts."""
    bad = {"index": None, "id": "x"}
    calls, problems = assemble(
        _chunks(
            [bad, {"index": 0, "id": "call_1", "function": {"name": "get_time", "arguments": "{}"}}]
        )
    )
    assert problems == ["fragment without integer index: {'index': None, 'id': 'x'}"]
    assert calls == {
        0: {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    }


def test_assemble_names_a_fragment_that_is_no_object_and_reads_on() -> None:
    """Garbage in a delta's tool_calls is a problem to report, not a crash of the check."""
    calls, problems = assemble(
        _chunks(
            [
                "x",
                {"index": 0, "function": "get_time"},
                {"index": 0, "id": "call_1", "function": {"name": "get_time"}},
            ]
        )
    )
    assert problems == [
        "fragment is not a call object with a function object: 'x'",
        "fragment is not a call object with a function object: {'index': 0, 'function': 'get_time'}",
    ]  # fmt: skip
    assert calls == {
        0: {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": ""}}
    }


# --- tools.no_call ------------------------------------------------------------------------------
def _answer_of(message: dict | None, finish_reason: str | None) -> dict:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}


@pytest.mark.parametrize(
    ("data", "judge_now"),
    [
        (_answer_of({"content": None, "tool_calls": [_call()]}, "tool_calls"), False),
        (_answer_of({"content": None, "tool_calls": [_call()]}, "length"), False),
        (_answer_of({"content": "it is sunny"}, "stop"), True),
        (_answer_of({"content": ""}, "stop"), True),
        (_answer_of({"content": ""}, "length"), False),
        (_answer_of({"content": None}, "length"), False),
        (_answer_of(None, "length"), False),
        (_answer_of({"content": "it is sunny"}, "length"), True),
        ({}, True),
    ],
    ids=[
        "call",
        "cut-call",
        "text",
        "empty-stop",
        "cut-empty",
        "cut-null",
        "cut-no-message",
        "cut-text",
        "no-choices",
    ],
)
def test_no_call_judges_a_callless_answer_unless_cut_with_nothing_shown(
    data: dict, judge_now: bool
) -> None:
    """A call is never judged early; a text answer is (cut or not); a cut with nothing shown is retried with another
    seed."""
    assert no_call(data) is judge_now


# --- tools.tool_request -----------------------------------------------------------------------------
def test_tool_request_is_the_exact_seeded_two_tool_request(ctx: conformance.CheckContext) -> None:
    """The weather question, both tools, the documented budget and sampling, seed 1234 unless told (checks 'none' and
    'auto' rely on it)."""
    want = {
        "model": MODEL,
        "messages": ASK,
        "tools": [WEATHER, TIME],
        "max_tokens": 128,
        "temperature": 0.8,
        "seed": 1234,
        "tool_choice": "required",
    }
    assert tool_request(ctx, "required") == want


def test_tool_request_params_override_and_no_choice_sends_none(
    ctx: conformance.CheckContext,
) -> None:
    """``tool_choice=None`` leaves the field out (the server's default is under test); params replace the defaults."""
    body = tool_request(ctx, None, seed=7, temperature=0, messages=PARALLEL_ASK)
    assert body == {
        "model": MODEL,
        "messages": PARALLEL_ASK,
        "tools": [WEATHER, TIME],
        "max_tokens": 128,
        "temperature": 0,
        "seed": 7,
    }


# --- tools.forced_call ---------------------------------------------------------------------------------
def test_forced_call_posts_the_tool_request_and_returns_its_json(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    with answers():
        ex, data = forced_call(ctx, "required")
    assert posted(fake, CHAT) == [tool_request(ctx, "required", seed=1234)]
    assert ex.status == 200 and data is ex.data
    assert data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_forced_call_retries_a_silent_cut_with_the_next_seed_and_keeps_the_params(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A cut with nothing shown is the model's fault: the next seed is tried, with the caller's messages and params."""
    fake.set_deviation(
        _chat_message({"role": "assistant", "content": ""}, "length", first_only=True)
    )
    with answers():
        ex, data = forced_call(ctx, "required", messages=PARALLEL_ASK, parallel_tool_calls=True)
    sent = [
        tool_request(ctx, "required", seed=s, messages=PARALLEL_ASK, parallel_tool_calls=True)
        for s in (1234, 1235)
    ]
    assert posted(fake, CHAT) == sent
    assert ex.body == sent[1] and data["choices"][0]["finish_reason"] == "tool_calls"


def test_forced_call_judges_cut_text_at_once(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Text where a forced call should be is a verdict, not bad luck: no retry, no "inconclusive"."""
    fake.set_deviation(
        _chat_message({"role": "assistant", "content": "I will not call a tool"}, "length")
    )
    with answers():
        _, data = forced_call(ctx, "required")
    assert len(posted(fake, CHAT)) == 1
    assert data["choices"][0]["message"] == {
        "role": "assistant",
        "content": "I will not call a tool",
    }


def test_forced_call_refused_is_unsupported_tools(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A refusal is reported against the feature the tools checks need, so the report groups it right."""
    fake.set_deviation(_answer(CHAT, 400))
    with pytest.raises(Unsupported) as info:
        forced_call(ctx, "required")
    assert info.value.feature == "tools"
    assert str(info.value.msg).startswith("unsupported: tools: the server refuses it: HTTP 400")


@pytest.mark.parametrize(
    ("choice", "quoted"),
    [
        ("required", 'tool_choice="required"'),
        (
            {"type": "function", "function": {"name": "get_time"}},
            'tool_choice={"type": "function", "function": {"name": "get_time"}}',
        ),
    ],
    ids=["required", "named"],
)
def test_forced_call_failure_names_the_tool_choice_as_json(
    choice: Any, quoted: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A 500 to a forced call says which tool_choice, as the JSON that was sent."""
    fake.set_deviation(_answer(CHAT, 500))
    with pytest.raises(CheckFailure) as info:
        forced_call(ctx, choice)
    assert info.value.expected == f"HTTP 200 for {quoted}"


# --- embeddings.embed / plain ------------------------------------------------------------------------
def test_embed_posts_two_inputs_with_the_params(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Two distinct inputs, so ``index`` 0 and 1 can be told apart; params are added as given."""
    ex = embed(ctx, dimensions=8)
    assert posted(fake, EMBEDDINGS) == [{"model": MODEL, "input": INPUT, "dimensions": 8}]
    assert ex.path == EMBEDDINGS and ex.status == 200


def test_plain_asks_for_floats_and_returns_the_answer(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """``encoding_format: float`` said outright: the SDK's default is base64, which plain must not get."""
    with answers():
        ex = plain(ctx)
    assert posted(fake, EMBEDDINGS) == [
        {"model": MODEL, "input": INPUT, "encoding_format": "float"}
    ]
    assert ex.status == 200 and isinstance(ex.data["data"][0]["embedding"], list)


def test_plain_refused_is_unsupported_embeddings(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(_answer(EMBEDDINGS, 404))
    with pytest.raises(Unsupported) as info:
        plain(ctx)
    assert info.value.feature == "embeddings"
    assert str(info.value.msg).startswith(
        "unsupported: embeddings: the server refuses it: HTTP 404"
    )


def test_plain_failure_says_embeddings(ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """A 500 is broken, not unsupported, and the failure names what was asked."""
    fake.set_deviation(_answer(EMBEDDINGS, 500))
    with pytest.raises(CheckFailure) as info:
        plain(ctx)
    assert info.value.expected == "HTTP 200 for embeddings"


# --- errors._overflow_prompt --------------------------------------------------------------------------
def test_overflow_prompt_is_twice_the_advertised_context(ctx: conformance.CheckContext) -> None:
    """One "hello " per token of twice the context: over-long on any tokenizer, yet bounded."""
    with answers():
        prompt = _overflow_prompt(ctx)
    assert prompt == "hello " * (2 * CONTEXT_LENGTH)


def test_overflow_prompt_skips_without_a_context_length(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Without max_model_len there is no safe length to send, and the skip says why."""
    listing = {"object": "list", "data": [GOOD_CARD]}  # a model card without max_model_len
    fake.set_deviation(
        Deviation(request=lambda path, body: (200, listing) if path == "/v1/models" else None)
    )
    with pytest.raises(pytest.skip.Exception) as info:
        _overflow_prompt(ctx)
    assert (
        info.value.msg
        == "the server does not expose its context length (max_model_len in /v1/models); an over-long prompt could"
        " exhaust its memory"
    )
