"""Transport and errors: the envelope, 4xx (never 5xx) for bad input, unknown models, context
overflow.
"""

from __future__ import annotations

import pytest

from ..context import CheckContext, Exchange, StreamExchange, envelope_type_problems
from ..registry import check
from .chat import shown

SPEC = "openai-openapi ErrorResponse; openai-conformance.md 'Transport and errors'"
# a chat request every server must refuse, to read its error envelope
NO_MESSAGES = {"max_tokens": 4}
# Requests no server may answer with 2xx or 5xx; each names what is wrong with it.
BAD_INPUTS: dict[str, dict] = {
    "temperature out of range": {"temperature": 5.0},
    "messages not a list": {"messages": "hello"},
    "message without role": {"messages": [{"content": "hi"}]},
    "max_tokens negative": {"max_tokens": -1},
}


def refused(ex: Exchange | StreamExchange) -> str:
    """A refusal as evidence: its status and the start of its body."""
    if isinstance(ex, StreamExchange):
        return f"HTTP {ex.sse.status} {shown(ex.sse.raw, 100)}"
    return f"HTTP {ex.status} {shown(ex.text, 100)}"


def without_messages(ctx: CheckContext) -> Exchange:
    """A chat request every server must refuse, after the same request with messages is seen to
    succeed.
    """
    ctx.control(
        ctx.post(
            "/v1/chat/completions",
            NO_MESSAGES | {"model": ctx.model, "messages": ctx.chat_body()["messages"]},
        ),
        "a chat request with messages",
    )
    return ctx.post("/v1/chat/completions", NO_MESSAGES | {"model": ctx.model})


@check(
    "errors.envelope", "error responses use the {error: {message, type}} envelope", reference=SPEC
)
def envelope(ctx: CheckContext) -> str:
    """The SDK reads ``error.message``; a flat body leaves users with a bare status code."""
    ex = without_messages(ctx)
    ctx.expect_client_error(ex, "a chat request without messages")
    ctx.expect_envelope(ex, expected='{"error": {"message": str, "type": str, ...}}')
    return f"a chat without messages: {refused(ex)}; HTTP 200 with messages"


@check(
    "errors.envelope-types",
    "error.param and error.code are strings or null",
    reference="openai-openapi Error schema (param, code: string | null); vllm#12886",
    severity="warning",
)
def envelope_types(ctx: CheckContext) -> str:
    """Typed clients (Go, TypeScript, pydantic) reject an integer ``code``."""
    ex = without_messages(ctx)
    ctx.expect_client_error(ex, "a chat request without messages")
    ctx.expect_envelope(
        ex, envelope_type_problems, "error.param and error.code present, each a string or null"
    )
    err = ex.data["error"]
    return (
        f"a chat without messages: HTTP {ex.status}, error.param {err['param']!r}, error.code "
        f"{err['code']!r}; HTTP 200"
        " with messages"
    )


@check(
    "errors.bad-input-4xx",
    "malformed or out-of-range requests get 4xx, never 5xx",
    reference="openai-conformance.md; vllm#17038",
)
def bad_input(ctx: CheckContext) -> str:
    """The SDK retries 5xx twice, so a 500 for bad input triples the load and hides the cause."""
    ctx.control(
        ctx.post("/v1/chat/completions", ctx.chat_body(max_tokens=4)),
        "a well-formed chat of 4 tokens",
    )
    ex = ctx.request("POST", "/v1/chat/completions", raw=b'{"model": "x", "messages": [')
    ctx.expect_client_error(ex, "a request body that is not valid JSON")
    statuses = [ex.status]
    for name, override in BAD_INPUTS.items():
        ex = ctx.post("/v1/chat/completions", {**ctx.chat_body(max_tokens=4), **override})
        ctx.expect_client_error(ex, name)
        statuses.append(ex.status)
    return (
        f"HTTP {statuses} for invalid JSON, {', '.join(BAD_INPUTS)}; HTTP 200 for the "
        "well-formed chat"
    )


@check(
    "errors.unknown-model",
    "an unknown model gets 404 with the error envelope",
    reference="openai-conformance.md (model_not_found)",
)
def unknown_model(ctx: CheckContext) -> str:
    """A typo in the model name must not silently run another model."""
    ctx.control(
        ctx.post("/v1/chat/completions", ctx.chat_body(max_tokens=4)),
        f"the same chat for the served model {ctx.model!r}",
    )
    ex = ctx.post(
        "/v1/chat/completions",
        {**ctx.chat_body(max_tokens=4), "model": "no-such-model-pytest-infer"},
    )
    ctx.expect(
        ex.status == 404, "HTTP 404 for an unknown model", f"HTTP {ex.status}: {ex.text}", ex
    )
    ctx.expect_envelope(ex)
    return f"an unknown model: {refused(ex)}; HTTP 200 for the served model"


def _overflow_prompt(ctx: CheckContext) -> str:
    length = ctx.context_length()
    if length is None:
        pytest.skip(
            "the server does not expose its context length (max_model_len in /v1/models); an "
            "over-long prompt could"
            " exhaust its memory"
        )
    return "hello " * (length * 2)


@check(
    "errors.context-overflow",
    "a prompt longer than the context gets 4xx with the envelope",
    reference="openai-conformance.md",
)
def context_overflow(ctx: CheckContext) -> str:
    """Users send long documents; they need a 400 that says so, not a 500 or a truncated answer."""
    prompt = _overflow_prompt(ctx)
    ctx.control(
        ctx.post("/v1/chat/completions", ctx.chat_body(max_tokens=4)),
        "the same chat with a short prompt",
    )
    ex = ctx.post(
        "/v1/chat/completions",
        ctx.chat_body(max_tokens=4) | {"messages": [{"role": "user", "content": prompt}]},
    )
    ctx.expect_refused(ex, "a prompt twice the context length")
    return f"a prompt twice the context: {refused(ex)}; HTTP 200 for a short one"


@check(
    "errors.context-overflow-stream",
    "with stream=true, an over-long prompt gets 4xx before the stream starts",
    reference="openai-conformance.md; sglang#12081",
)
def context_overflow_stream(ctx: CheckContext) -> str:
    """The SDK raises on a 4xx status; an HTTP 200 stream that carries the error is seen too late or
    not at all.
    """
    body = ctx.chat_body(max_tokens=4) | {
        "messages": [{"role": "user", "content": _overflow_prompt(ctx)}]
    }
    ctx.control(
        ctx.stream("/v1/chat/completions", ctx.chat_body(max_tokens=4)),
        "the same stream with a short prompt",
    )
    ex = ctx.stream("/v1/chat/completions", body)
    ctx.expect_refused(ex, "a streamed prompt twice the context length")
    return f"a streamed prompt twice the context: {refused(ex)}; a stream for a short one"


@check(
    "errors.bad-input-stream",
    "with stream=true, bad parameters get 4xx before the stream starts",
    reference="openai-conformance.md",
)
def bad_input_stream(ctx: CheckContext) -> str:
    """Validation must not depend on ``stream``."""
    ctx.control(
        ctx.stream("/v1/chat/completions", ctx.chat_body(max_tokens=4, temperature=1.0)),
        "the same stream with temperature=1.0",
    )
    ex = ctx.stream("/v1/chat/completions", ctx.chat_body(max_tokens=4, temperature=5.0))
    ctx.expect_refused(ex, "temperature=5.0 with stream=true")
    return f"temperature=5.0 with stream=true: {refused(ex)}; a stream with temperature=1.0"
