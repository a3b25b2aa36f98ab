"""Transport and errors: the envelope, 4xx (never 5xx) for bad input, unknown models, context overflow."""
from __future__ import annotations

from ..context import CheckContext, envelope_type_problems
from ..registry import check

SPEC = "openai-openapi ErrorResponse; openai-conformance.md 'Transport and errors'"
NO_MESSAGES = {"max_tokens": 4}  # a chat request every server must refuse, to read its error envelope
# Requests no server may answer with 2xx or 5xx; each names what is wrong with it.
BAD_INPUTS: dict[str, dict] = {
    "temperature out of range": {"temperature": 5.0},
    "messages not a list": {"messages": "hello"},
    "message without role": {"messages": [{"content": "hi"}]},
    "max_tokens negative": {"max_tokens": -1},
}


@check("errors.envelope", "error responses use the {error: {message, type}} envelope", reference=SPEC)
def envelope(ctx: CheckContext) -> None:
    """The SDK reads ``error.message``; a flat body leaves users with a bare status code."""
    ex = ctx.post("/v1/chat/completions", NO_MESSAGES | {"model": ctx.model})
    ctx.expect_client_error(ex, "a chat request without messages")
    ctx.expect_envelope(ex, expected='{"error": {"message": str, "type": str, ...}}')


@check(
    "errors.envelope-types",
    "error.param and error.code are strings or null",
    reference="openai-openapi Error schema (param, code: string | null); vllm#12886",
    severity="warning",
)
def envelope_types(ctx: CheckContext) -> None:
    """Typed clients (Go, TypeScript, pydantic) reject an integer ``code``."""
    ex = ctx.post("/v1/chat/completions", NO_MESSAGES | {"model": ctx.model})
    ctx.expect_client_error(ex, "a chat request without messages")
    ctx.expect_envelope(ex, envelope_type_problems, "error.param and error.code present, each a string or null")


@check("errors.bad-input-4xx", "malformed or out-of-range requests get 4xx, never 5xx", reference="openai-conformance.md; vllm#17038")
def bad_input(ctx: CheckContext) -> None:
    """The SDK retries 5xx twice, so a 500 for bad input triples the load and hides the cause."""
    ex = ctx.request("POST", "/v1/chat/completions", raw=b'{"model": "x", "messages": [')
    ctx.expect_client_error(ex, "a request body that is not valid JSON")
    for name, override in BAD_INPUTS.items():
        ex = ctx.post("/v1/chat/completions", {**ctx.chat_body(max_tokens=4), **override})
        ctx.expect_client_error(ex, name)


@check("errors.unknown-model", "an unknown model gets 404 with the error envelope", reference="openai-conformance.md (model_not_found)")
def unknown_model(ctx: CheckContext) -> None:
    """A typo in the model name must not silently run another model."""
    ex = ctx.post("/v1/chat/completions", {**ctx.chat_body(max_tokens=4), "model": "no-such-model-pytest-infer"})
    ctx.expect(ex.status == 404, "HTTP 404 for an unknown model", f"HTTP {ex.status}: {ex.text}", ex)
    ctx.expect_envelope(ex)


def _overflow_prompt(ctx: CheckContext) -> str:
    length = ctx.context_length()
    if length is None:
        import pytest

        pytest.skip("the server does not expose its context length (max_model_len in /v1/models); an over-long prompt could exhaust its memory")
    return "hello " * (length * 2)


@check("errors.context-overflow", "a prompt longer than the context gets 4xx with the envelope", reference="openai-conformance.md")
def context_overflow(ctx: CheckContext) -> None:
    """Users send long documents; they need a 400 that says so, not a 500 or a truncated answer."""
    ex = ctx.post("/v1/chat/completions", ctx.chat_body(max_tokens=4) | {"messages": [{"role": "user", "content": _overflow_prompt(ctx)}]})
    ctx.expect_refused(ex, "a prompt twice the context length")


@check(
    "errors.context-overflow-stream",
    "with stream=true, an over-long prompt gets 4xx before the stream starts",
    reference="openai-conformance.md; sglang#12081",
)
def context_overflow_stream(ctx: CheckContext) -> None:
    """The SDK raises on a 4xx status; an HTTP 200 stream that carries the error is seen too late or not at all."""
    body = ctx.chat_body(max_tokens=4) | {"messages": [{"role": "user", "content": _overflow_prompt(ctx)}]}
    ex = ctx.stream("/v1/chat/completions", body)
    ctx.expect_refused(ex, "a streamed prompt twice the context length")


@check("errors.bad-input-stream", "with stream=true, bad parameters get 4xx before the stream starts", reference="openai-conformance.md")
def bad_input_stream(ctx: CheckContext) -> None:
    """Validation must not depend on ``stream``."""
    ex = ctx.stream("/v1/chat/completions", ctx.chat_body(max_tokens=4, temperature=5.0))
    ctx.expect_refused(ex, "temperature=5.0 with stream=true")
