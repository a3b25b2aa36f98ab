"""The official openai SDK, sync and async: what users run must consume every response and stream.

Each check makes the request through the SDK and compares what the SDK hands
the user with what the raw HTTP answer carried, so an exception or a silently
dropped field both fail.
"""

from __future__ import annotations

import json
from typing import Any

from ..context import USER, CheckContext
from ..failures import Inconclusive
from ..registry import check
from . import messages, responses
from .chat import LIMIT, content_of, greedy, shown
from .embeddings import first_vector, plain
from .tools import ASK, TIME, WEATHER

SPEC = "the openai Python SDK (openai.OpenAI / openai.AsyncOpenAI)"


def _sdk_error(ctx: CheckContext, exc: Exception, what: str, curl: str) -> None:
    ctx.fail(f"the SDK to consume {what}", f"{type(exc).__name__}: {exc}", curl)


def _greedy_text(ctx: CheckContext) -> tuple[str, dict[str, Any], str]:
    """The raw greedy text, "" where the answer has none: the SDK is called anyway (a crash is a
    finding), and ``_compared`` then refuses to call two missing texts the same."""
    ex, data = greedy(ctx)
    text = content_of(data)
    return text if isinstance(text, str) else "", data, ex.curl


def _compared(ctx: CheckContext, text: str | None, curl: str) -> str:
    return str(ctx.nonempty(text, "text in the raw answer to compare the SDK's with", curl))


@check(
    "sdk.chat",
    "the sync SDK returns the same message and usage as the raw response",
    reference=SPEC,
)
def chat(ctx: CheckContext) -> str:
    """``client.chat.completions.create`` is the one call every user makes."""
    text, raw, curl = _greedy_text(ctx)
    try:
        resp = ctx.openai().chat.completions.create(
            model=ctx.model, messages=USER, max_tokens=LIMIT, temperature=0
        )
        got = {
            "content": resp.choices[0].message.content,
            "total_tokens": resp.usage.total_tokens if resp.usage else None,
            "id": resp.id,
        }
    except Exception as exc:  # noqa: BLE001 - any SDK exception (or a field it cannot reach) is the finding
        _sdk_error(ctx, exc, "a chat completion", curl)
    want = {
        "content": _compared(ctx, text, curl),
        "total_tokens": (raw.get("usage") or {}).get("total_tokens"),
    }
    ctx.expect(
        got["content"] == want["content"]
        and got["total_tokens"] == want["total_tokens"]
        and got["id"],
        f"SDK fields equal to the raw ones {want} and an id",
        got,
        curl,
    )
    return (
        f"the SDK's content {shown(text)}, total_tokens {want['total_tokens']} and id equal to "
        "the raw answer's"
    )


@check(
    "sdk.chat-async", "the async SDK returns the same message as the raw response", reference=SPEC
)
async def chat_async(ctx: CheckContext) -> str:
    """Async servers (FastAPI apps, agents) use ``AsyncOpenAI``."""
    text, _, curl = _greedy_text(ctx)
    try:
        async with ctx.async_openai() as client:
            resp = await client.chat.completions.create(
                model=ctx.model, messages=USER, max_tokens=LIMIT, temperature=0
            )
            content = resp.choices[0].message.content
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "a chat completion", curl)
    ctx.expect(content == _compared(ctx, text, curl), f"the raw content {text!r}", content, curl)
    return f"the async SDK's content equal to the raw answer's {shown(text)}"


def _stream_text(chunks: list[Any]) -> tuple[str, Any, list[str]]:
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = next((c.usage for c in chunks if c.usage), None)
    reasons = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    return text, usage, reasons


@check(
    "sdk.chat-stream",
    "the sync SDK stream yields the non-streamed text, one finish_reason, and usage",
    reference=SPEC,
)
def chat_stream(ctx: CheckContext) -> str:
    """``for chunk in client.chat.completions.create(stream=True)`` is how chat UIs render."""
    text, _, curl = _greedy_text(ctx)
    try:
        stream = ctx.openai().chat.completions.create(
            model=ctx.model,
            messages=USER,
            max_tokens=LIMIT,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        got, usage, reasons = _stream_text(list(stream))
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "a chat stream", curl)
    got_all = {"text": got, "finish_reasons": reasons, "usage": str(usage)}
    ctx.expect(
        got == _compared(ctx, text, curl) and len(reasons) == 1 and usage is not None,
        f"text {text!r}, one finish_reason, a usage chunk",
        got_all,
        curl,
    )
    return (
        f"the SDK stream: the raw text {shown(text)}, finish_reason {reasons[0]!r}, a usage chunk"
    )


@check("sdk.chat-stream-async", "the async SDK stream yields the non-streamed text", reference=SPEC)
async def chat_stream_async(ctx: CheckContext) -> str:
    """``async for chunk in await client.chat.completions.create(stream=True)``."""
    text, _, curl = _greedy_text(ctx)
    try:
        async with ctx.async_openai() as client:
            stream = await client.chat.completions.create(
                model=ctx.model, messages=USER, max_tokens=LIMIT, temperature=0, stream=True
            )
            got, _, reasons = _stream_text([c async for c in stream])
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "a chat stream", curl)
    ctx.expect(
        got == _compared(ctx, text, curl) and len(reasons) == 1,
        f"text {text!r} and one finish_reason",
        {"text": got, "finish_reasons": reasons},
        curl,
    )
    return f"the async SDK stream: the raw text {shown(text)}, finish_reason {reasons[0]!r}"


@check(
    "sdk.errors",
    "the SDK raises the status's exception class with the server's message",
    reference=f"{SPEC} (openai.BadRequestError, NotFoundError)",
)
def errors(ctx: CheckContext) -> str:
    """Users catch ``openai.BadRequestError``; a 500 becomes ``InternalServerError`` after two
    retries.
    """
    # lazy: openai takes about a second to import; only the SDK checks need it
    import openai

    ctx.control(ctx.chat(max_tokens=2), "the same chat with messages, for the served model")
    raised = []
    cases: list[tuple[dict[str, Any], tuple[type[openai.APIStatusError], ...], str]] = [
        (
            {"messages": []},
            (openai.BadRequestError, openai.UnprocessableEntityError),
            "an empty messages list",
        ),
        ({"model": "no-such-model-pytest-infer"}, (openai.NotFoundError,), "an unknown model"),
    ]
    for override, classes, what in cases:
        params = {"model": ctx.model, "messages": USER, "max_tokens": 2, **override}
        curl = ctx.curl("POST", "/v1/chat/completions", params)
        try:
            ctx.openai().chat.completions.create(**params)
        except classes as exc:
            ctx.expect(
                isinstance(exc.message, str) and exc.message and exc.body is not None,
                "an exception carrying the server's message and body",
                repr(exc),
                curl,
            )
            raised.append(f"{type(exc).__name__} for {what}")
            continue
        except Exception as exc:  # noqa: BLE001
            ctx.fail(
                f"{' or '.join(c.__name__ for c in classes)} for {what}",
                f"{type(exc).__name__}: {exc}",
                curl,
            )
        ctx.fail(
            f"{' or '.join(c.__name__ for c in classes)} for {what}",
            "no exception: the request succeeded",
            curl,
        )
    return f"{'; '.join(raised)}, each with the server's message; HTTP 200 for the good chat"


@check(
    "sdk.errors-stream-async",
    "the async SDK raises BadRequestError for a streamed request without messages",
    reference=SPEC,
)
async def errors_stream_async(ctx: CheckContext) -> str:
    """An error must surface when the stream is opened, where users wrap it in try/except."""
    # lazy: openai takes about a second to import; only the SDK checks need it
    import openai

    ctx.control(ctx.chat_stream(max_tokens=2), "the same stream with messages")
    params = {"model": ctx.model, "messages": [], "max_tokens": 2, "stream": True}
    curl = ctx.curl("POST", "/v1/chat/completions", params, stream=True)
    try:
        async with ctx.async_openai() as client:
            stream = await client.chat.completions.create(**params)
            chunks = [c async for c in stream]
    except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
        return (
            f"{type(exc).__name__} ({exc.status_code}) when the stream without messages was "
            "opened; the stream with"
            " messages ran"
        )
    except Exception as exc:  # noqa: BLE001
        ctx.fail("BadRequestError when the stream is opened", f"{type(exc).__name__}: {exc}", curl)
    ctx.fail("BadRequestError when the stream is opened", f"a stream of {len(chunks)} chunks", curl)


@check(
    "sdk.completions",
    "the sync and async SDK consume completions and their streams",
    reference=SPEC,
    needs=("completions",),
)
async def completions(ctx: CheckContext) -> str:
    """``client.completions.create`` still backs evaluation harnesses."""
    ex = ctx.offered("completions", ctx.completion(max_tokens=8, temperature=0))
    choices = ctx.expect_json_object(ex, "a completion").get("choices")
    text = (
        choices[0].get("text")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict)
        else None
    )
    if not isinstance(text, str):
        ctx.fail("choices[0].text in the raw completion", ex.text[:300], ex)
    curl = ctx.curl(
        "POST",
        "/v1/completions",
        {"model": ctx.model, "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0},
    )
    try:
        sync = ctx.openai().completions.create(
            model=ctx.model, prompt="Once upon a time", max_tokens=8, temperature=0
        )
        async with ctx.async_openai() as client:
            stream = await client.completions.create(
                model=ctx.model, prompt="Once upon a time", max_tokens=8, temperature=0, stream=True
            )
            streamed = "".join([c.choices[0].text async for c in stream if c.choices])
        got = {"sync": sync.choices[0].text, "async stream": streamed}
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "completions", curl)
    ctx.expect(
        got["sync"] == text and got["async stream"] == text,
        f"the raw text {text!r} both ways",
        got,
        curl,
    )
    return f"the sync completion and the async stream both gave the raw text {shown(text)}"


@check(
    "sdk.tool-stream",
    "the SDK assembles a streamed tool call into valid JSON arguments",
    reference=SPEC,
    needs=("tools",),
)
def tool_stream(ctx: CheckContext) -> str:
    """Agent frameworks accumulate ``delta.tool_calls`` by index exactly like this."""
    params = {
        "model": ctx.model,
        "messages": ASK,
        "tools": [WEATHER, TIME],
        "tool_choice": "required",
        "max_tokens": 128,
        "temperature": 0.8,
    }
    ctx.offered("tools", ctx.post("/v1/chat/completions", params | {"max_tokens": 2}))
    for seed in (1234, 1235, 1236):
        curl = ctx.curl(
            "POST", "/v1/chat/completions", params | {"seed": seed, "stream": True}, stream=True
        )
        calls: dict[int, dict[str, str]] = {}
        reasons: list[str] = []
        try:
            for chunk in ctx.openai().chat.completions.create(**params, seed=seed, stream=True):
                for choice in chunk.choices:
                    if choice.finish_reason:
                        reasons.append(choice.finish_reason)
                    for frag in choice.delta.tool_calls or []:
                        call = calls.setdefault(frag.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = call["id"] or (frag.id or "")
                        if frag.function:
                            call["name"] = call["name"] or (frag.function.name or "")
                            call["arguments"] += frag.function.arguments or ""
        except Exception as exc:  # noqa: BLE001
            _sdk_error(ctx, exc, "a streamed tool call", curl)
        if reasons != ["length"] or not calls:
            # ended by itself, or already judged: a forced call that streamed no fragment at all
            break
    else:
        raise Inconclusive(f"the model ran to max_tokens with 3 seeds: {curl}")
    try:
        parsed = [json.loads(c["arguments"]) for c in calls.values()]
    except ValueError:
        parsed = None
    ctx.expect(
        calls and parsed is not None and all(c["id"] and c["name"] for c in calls.values()),
        "calls with id, name and JSON arguments",
        calls,
        curl,
    )
    return f"the SDK assembled {len(calls)} streamed call(s) " + ", ".join(
        f"{c['name']}({shown(c['arguments'], 40)})" for c in calls.values()
    )


@check(
    "sdk.embeddings",
    "the SDK's default (base64) embeddings decode to the float vector",
    reference=f"{SPEC}; vllm#5734",
    needs=("embeddings",),
)
def embeddings(ctx: CheckContext) -> str:
    """``client.embeddings.create`` asks for base64 unless told otherwise."""
    floats = first_vector(ctx, plain(ctx), "float embeddings")
    curl = ctx.curl(
        "POST",
        "/v1/embeddings",
        {"model": ctx.model, "input": ["hello world", "good night"], "encoding_format": "base64"},
    )
    try:
        got = (
            ctx.openai()
            .embeddings.create(model=ctx.model, input=["hello world", "good night"])
            .data[0]
            .embedding
        )
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "embeddings", curl)
    # the SDK hands on an embedding that is not a base64 string as the server sent it: judged, never
    # a crash
    numbers = isinstance(got, list) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in got
    )
    head = got[:4] if isinstance(got, list) else got
    ctx.expect(
        numbers
        and len(got) == len(floats)
        and all(abs(a - b) <= 1e-3 * max(1.0, abs(b)) for a, b in zip(got, floats)),
        f"{len(floats)} floats equal to encoding_format=float",
        head,
        curl,
    )
    return f"the SDK's default embedding: {len(floats)} floats equal to encoding_format=float"


def _greedy_response(ctx: CheckContext) -> tuple[str | None, str]:
    ex, data = responses.create(ctx)
    return responses.output_text(data), ex.curl


@check(
    "sdk.responses",
    "the sync SDK's responses client returns the raw output_text, and its stream ends in the same "
    "response",
    reference=SPEC,
    needs=("responses",),
)
def responses_sync(ctx: CheckContext) -> str:
    """``client.responses.create(...).output_text`` and ``for event in
    client.responses.create(stream=True)``.
    """
    text, curl = _greedy_response(ctx)
    params = {
        "model": ctx.model,
        "input": responses.INPUT,
        "max_output_tokens": responses.LIMIT,
        "temperature": 0,
    }
    try:
        got = ctx.openai().responses.create(**params).output_text
        events = list(ctx.openai().responses.create(**params, stream=True))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        final = (
            events[-1].response.output_text if events and hasattr(events[-1], "response") else None
        )
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "a response and its stream", curl)
    seen = {"output_text": got, "deltas": deltas, "final": final}
    ctx.expect(
        got == _compared(ctx, text, curl) and deltas == text and final == text,
        f"output_text, joined deltas and the final response's text all {text!r}",
        seen,
        curl,
    )
    return (
        f"the SDK's output_text, its {len(events)} streamed events' deltas and final response "
        f"all {shown(text)}"
    )


@check(
    "sdk.responses-async",
    "the async SDK's responses client returns the raw output_text",
    reference=SPEC,
    needs=("responses",),
)
async def responses_async(ctx: CheckContext) -> str:
    """``await client.responses.create(...)`` in async agent frameworks."""
    text, curl = _greedy_response(ctx)
    try:
        async with ctx.async_openai() as client:
            got = (
                await client.responses.create(
                    model=ctx.model,
                    input=responses.INPUT,
                    max_output_tokens=responses.LIMIT,
                    temperature=0,
                )
            ).output_text
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "a response", curl)
    ctx.expect(got == _compared(ctx, text, curl), f"the raw output_text {text!r}", got, curl)
    return f"the async SDK's output_text equal to the raw {shown(text)}"


@check(
    "sdk.anthropic",
    "the anthropic SDK returns the raw message's text and stop reason, and its stream builds the "
    "same message",
    reference="the anthropic Python SDK (anthropic.Anthropic)",
    needs=("messages",),
)
def anthropic_sdk(ctx: CheckContext) -> str:
    """Claude clients pointed at the server: ``client.messages.create`` and
    ``client.messages.stream``.
    """
    ex, raw = messages.create(ctx)
    want = {"text": messages.text_of(raw), "stop_reason": raw.get("stop_reason")}
    # greedy through extra_body: this SDK's create() takes no temperature argument
    params = {
        "model": ctx.model,
        "max_tokens": messages.LIMIT,
        "messages": messages.ASK,
        "extra_body": {"temperature": 0},
    }
    try:
        with ctx.anthropic() as client:
            message = client.messages.create(**params)
            with client.messages.stream(**params) as stream:
                streamed = stream.get_final_message()
        got = {
            "text": "".join(b.text for b in message.content if b.type == "text"),
            "stop_reason": message.stop_reason,
        }
        built = {
            "text": "".join(b.text for b in streamed.content if b.type == "text"),
            "stop_reason": streamed.stop_reason,
        }
    except Exception as exc:  # noqa: BLE001
        _sdk_error(ctx, exc, "a message and its stream", ex.curl)
    ctx.expect(
        got == want and built == want,
        f"the raw message's {want}, created and streamed",
        {"created": got, "streamed": built},
        ex.curl,
    )
    return (
        f"the anthropic SDK's created and streamed messages: the raw text {shown(want['text'])}, "
        "stop_reason"
        f" {want['stop_reason']!r}"
    )
