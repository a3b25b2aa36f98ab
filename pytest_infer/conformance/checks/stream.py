"""Streaming: SSE framing, [DONE], stable id/created, role first, same text as non-streamed,
finish_reason, usage.
"""

from __future__ import annotations

from typing import Any

from ...client.errors import carries_error
from ...outcomes import NotExercised
from ..context import CheckContext, StreamExchange
from ..registry import check
from .chat import LIMIT, MULTIBYTE, content_of, greedy, shown, stop_case

SPEC = "openai-openapi CreateChatCompletionStreamResponse"


def chat_stream(ctx: CheckContext, **params: Any) -> tuple[StreamExchange, list[dict[str, Any]]]:
    ex = ctx.chat_stream(**{"max_tokens": LIMIT, "temperature": 0, **params})
    return ex, ctx.expect_stream(ex, "a streamed chat completion")


def content_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in chunks if c.get("choices")]


def joined(chunks: list[dict[str, Any]], index: int = 0) -> str:
    return "".join(
        (ch.get("delta") or {}).get("content") or ""
        for c in chunks
        for ch in c.get("choices") or []
        if isinstance(ch, dict) and ch.get("index") == index
    )


@check(
    "stream.sse-framing",
    "the stream is 'data: {json}' events ending with 'data: [DONE]'",
    reference="WHATWG SSE; openai-openapi (stream); TGI PR #2221",
)
def sse_framing(ctx: CheckContext) -> str:
    """The SDK's SSE decoder stops at ``[DONE]``; anything else hangs it or raises."""
    ex = ctx.chat_stream(max_tokens=LIMIT, temperature=0)
    ctx.expect_ok(ex, "a streamed chat completion")
    ctx.expect(
        not ex.sse.problems,
        "only 'data: {json}' events, each closed by a blank line, then 'data: [DONE]'",
        "; ".join(ex.sse.problems) + f" | raw: {ex.sse.raw}",
        ex,
    )
    ctx.expect(ex.sse.chunks, "at least one chunk before [DONE]", ex.sse.raw, ex)
    return f"{len(ex.sse.chunks)} 'data: {{json}}' events, then 'data: [DONE]'"


@check(
    "stream.chunk-identity",
    "every chunk has object 'chat.completion.chunk' and the same id, created and model",
    reference=SPEC,
)
def chunk_identity(ctx: CheckContext) -> str:
    """Clients group chunks by ``id``; a changing id splits one answer into many. ``model`` is
    required in every chunk (CreateChatCompletionStreamResponse): a client that reads it from any
    chunk, the last one with the usage included, meets a missing key."""
    ex, chunks = chat_stream(ctx)
    objects = {c.get("object") for c in chunks}
    ids = {c.get("id") for c in chunks}
    created = {c.get("created") for c in chunks}
    models = {c.get("model") for c in chunks}
    ctx.expect(
        objects == {"chat.completion.chunk"},
        "object 'chat.completion.chunk' in every chunk",
        sorted(map(str, objects)),
        ex,
    )
    ctx.expect(
        len(ids) == 1 and next(iter(ids)),
        "one non-empty id across the stream",
        sorted(map(str, ids)),
        ex,
    )
    ctx.expect(
        len(created) == 1 and isinstance(next(iter(created)), int),
        "one integer created across the stream",
        sorted(map(str, created)),
        ex,
    )
    ctx.expect(
        len(models) == 1 and isinstance(model := next(iter(models)), str) and bool(model),
        "one model named in every chunk",
        sorted(map(str, models)),
        ex,
    )
    return (
        f"{len(chunks)} chunks of object 'chat.completion.chunk', one id "
        f"{shown(next(iter(ids)), 40)}, one created,"
        f" one model {shown(next(iter(models)), 40)}"
    )


@check(
    "stream.first-delta-role",
    "the first delta of each choice carries role 'assistant'",
    reference=SPEC,
)
def first_delta_role(ctx: CheckContext) -> str:
    """Chat UIs create the message bubble from the role of the first delta."""
    ex, chunks = chat_stream(ctx)
    first = next(
        (
            ch.get("delta")
            for c in content_chunks(chunks)
            for ch in c["choices"]
            if isinstance(ch, dict) and ch.get("index", 0) == 0
        ),
        None,
    )
    ctx.expect(
        isinstance(first, dict) and first.get("role") == "assistant",
        "role 'assistant' in the first delta",
        first,
        ex,
    )
    return f"role 'assistant' in the first delta of {len(chunks)} chunks"


@check(
    "stream.text-equals-nonstream",
    "the concatenated deltas equal the non-streamed text of the same greedy request",
    reference="openai-conformance.md; TRT-LLM#3280",
)
def text_equals_nonstream(ctx: CheckContext) -> str:
    """A client switching ``stream`` on must get the same answer, not repeated or missing text."""
    _, data = greedy(ctx, max_tokens=16)
    ex, chunks = chat_stream(ctx, max_tokens=16)
    ctx.agree(content_of(data), joined(chunks), f"the non-streamed text {content_of(data)!r}", ex)
    return f"{len(chunks)} chunks joining to the non-streamed text {shown(content_of(data))}"


@check(
    "stream.multibyte-text",
    "characters of several tokens stream whole: the deltas join to the non-streamed text, no "
    "replacement character",
    reference=f"{SPEC} (delta.content); openai-conformance.md",
)
def multibyte_text(ctx: CheckContext) -> str:
    """A server that decodes each token alone sends half a character as U+FFFD; ASCII gibberish
    never has one.
    """
    _, data = greedy(ctx, messages=MULTIBYTE, max_tokens=12)
    expected = content_of(data)
    wide = ctx.nonempty(
        sorted({ch for ch in expected or "" if ord(ch) > 0x7F}), "non-ASCII character in the answer"
    )
    ex, chunks = chat_stream(ctx, messages=MULTIBYTE, max_tokens=12)
    ctx.agree(expected, joined(chunks), f"the non-streamed text {expected!r}", ex)
    return (
        f"{len(chunks)} chunks joining to the non-streamed text {shown(expected)} ({len(wide)} "
        "non-ASCII characters)"
    )


@check(
    "stream.one-finish-reason",
    "each choice gets exactly one non-null finish_reason",
    reference=f"{SPEC}; SGLang PR #8417",
)
def one_finish_reason(ctx: CheckContext) -> str:
    """The SDK's stream helpers finish a choice on its ``finish_reason``; two end it twice, none
    never.
    """
    ex, chunks = chat_stream(ctx)
    counts: dict[int, int] = {}
    for c in chunks:
        for ch in c.get("choices") or []:
            ch = ch if isinstance(ch, dict) else {"index": repr(ch)}  # not a choice: never finished
            counts.setdefault(ch.get("index", 0), 0)
            if ch.get("finish_reason") is not None:
                counts[ch.get("index", 0)] += 1
    ctx.expect(
        counts and all(n == 1 for n in counts.values()),
        "one non-null finish_reason per choice index",
        counts,
        ex,
    )
    return f"one finish_reason for each of {len(counts)} choice index(es) in {len(chunks)} chunks"


@check(
    "stream.stop",
    "a stop string spanning token boundaries also ends a streamed text before it",
    reference="vllm#3574; TGI#1979",
)
def stream_stop(ctx: CheckContext) -> str:
    """Streaming servers check stops on detokenized fragments, where boundaries hide them."""
    text, stop_string, expected = stop_case(ctx)
    ex, chunks = chat_stream(ctx, max_tokens=24, stop=[stop_string])
    reasons = [
        ch.get("finish_reason")
        for c in chunks
        for ch in c.get("choices") or []
        if ch.get("finish_reason")
    ]
    ctx.expect(
        joined(chunks) == expected and reasons == ["stop"],
        f"{expected!r} and finish_reason 'stop' (the greedy text {text!r} cut before "
        f"{stop_string!r})",
        {"content": joined(chunks), "finish_reasons": reasons},
        ex,
    )
    return (
        f"stop {stop_string!r} cut the streamed greedy text {shown(text)} to "
        f"{shown(expected)}, finish_reason 'stop'"
    )


@check(
    "stream.usage-off",
    "without stream_options.include_usage no chunk carries usage",
    reference=f"{SPEC} (usage); llama.cpp#16048",
)
def usage_off(ctx: CheckContext) -> str:
    """Clients that did not ask for usage do not expect a chunk with empty ``choices``."""
    ex, chunks = chat_stream(ctx)
    ctx.nonempty(content_chunks(chunks), "chunk with choices in the stream", ex)
    with_usage = [c for c in chunks if c.get("usage") is not None]
    empty = [c for c in chunks if c.get("choices") == []]
    ctx.expect(
        not with_usage and not empty,
        "no usage and no empty-choices chunk",
        (with_usage or empty)[:2],
        ex,
    )
    return f"no usage and no empty-choices chunk among {len(chunks)} chunks"


@check(
    "stream.include-usage",
    "include_usage gives one final chunk with choices [] and usage, just before [DONE]",
    reference="openai-openapi ChatCompletionStreamOptions",
)
def include_usage(ctx: CheckContext) -> str:
    """Token accounting of streamed requests depends on exactly one usage chunk, last."""
    ex, chunks = chat_stream(ctx, stream_options={"include_usage": True})
    with_usage = [i for i, c in enumerate(chunks) if c.get("usage") is not None]
    ctx.expect(
        with_usage == [len(chunks) - 1],
        "usage only in the last chunk",
        f"usage in chunks {with_usage} of {len(chunks)}",
        ex,
    )
    last = chunks[-1]
    ctx.expect(last.get("choices") == [], "choices [] in the usage chunk", last, ex)
    u = last["usage"]
    ok = isinstance(u, dict) and all(
        isinstance(u.get(k), int) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
    )
    ctx.expect(
        ok and u["prompt_tokens"] + u["completion_tokens"] == u["total_tokens"],
        "prompt + completion = total tokens",
        u,
        ex,
    )
    pieces = len(
        [
            1
            for c in content_chunks(chunks)
            if any(
                (ch.get("delta") or {}).get("content")
                for ch in c["choices"]
                if isinstance(ch, dict)
            )
        ]
    )
    ctx.expect(
        u["completion_tokens"] >= 1 and u["completion_tokens"] <= LIMIT,
        f"1..{LIMIT} completion tokens ({pieces} content chunks)",
        u,
        ex,
    )
    return (
        f"usage only in the last of {len(chunks)} chunks, choices []: {u['prompt_tokens']} + "
        f"{u['completion_tokens']} ="
        f" {u['total_tokens']}"
    )


@check(
    "stream.options-without-stream",
    "stream_options with stream=false gets 400",
    reference="openai-openapi (stream_options: only set this when stream is true)",
    severity="warning",
)
def options_without_stream(ctx: CheckContext) -> str:
    """A client that sets ``stream_options`` by mistake should learn it, not have it ignored."""
    ctx.control(
        ctx.chat(max_tokens=2, stream=False),
        "the same chat with stream=false and no stream_options",
    )
    ex = ctx.chat(max_tokens=2, stream=False, stream_options={"include_usage": True})
    ctx.expect_client_error(ex, "stream_options with stream=false")
    return f"stream_options with stream=false: HTTP {ex.status}; HTTP 200 without stream_options"


@check(
    "stream.error-event",
    "an error inside a stream is an {error: {...}} event followed by [DONE]",
    reference="openai-conformance.md (errors during a stream)",
)
def error_event(ctx: CheckContext) -> str:
    """The SDK raises ``APIError`` from an error event; a bare or unterminated one hangs or is
    dropped.

    Real servers cannot be made to fail mid-stream on demand, so against them
    this judges whatever error event a normal stream carries (usually none);
    the fake server's mutation proves the judgement itself.
    """
    ex = ctx.chat_stream(max_tokens=LIMIT, temperature=0)
    ctx.expect_ok(ex, "a streamed chat completion")
    errors = [i for i, c in enumerate(ex.sse.chunks) if carries_error(c)]
    if not errors:
        raise NotExercised("the stream carried no error event, so there was nothing to judge")
    for i in errors:
        c = ex.sse.chunks[i]
        err = c["error"]
        ctx.expect(
            isinstance(err, dict) and isinstance(err.get("message"), str),
            'error event {"error": {"message": ...}}',
            c,
            ex,
        )
        ctx.expect(
            i == len(ex.sse.chunks) - 1 and ex.sse.done,
            "the error event last, then [DONE]",
            ex.sse.raw,
            ex,
        )
    return (
        f"the error event {shown(ex.sse.chunks[errors[0]], 80)}: an error object with a "
        "message, last, then [DONE]"
    )
