"""The Anthropic Messages API (``/v1/messages``) as vLLM and SGLang serve it: what Claude clients
and their SDK send.
"""

from __future__ import annotations

from typing import Any

from ..context import CheckContext, Exchange, object_or_empty
from ..registry import check
from .chat import shown
from .models import judge_model_names

REFERENCE = "Anthropic API reference: Messages (create, streaming, count tokens, errors)"
PATH = "/v1/messages"
ASK = [{"role": "user", "content": "Write a short story about a cat who learns to sail."}]
LIMIT = 8
STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal")
STREAM_ORDER = (
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
)


def body(ctx: CheckContext, **params: Any) -> dict[str, Any]:
    return {"model": ctx.model, "max_tokens": LIMIT, "messages": ASK, "temperature": 0, **params}


def create(ctx: CheckContext, **params: Any) -> tuple[Exchange, dict[str, Any]]:
    ex = ctx.offered("messages", ctx.post(PATH, body(ctx, **params)))
    return ex, ctx.expect_json_object(ex, "POST /v1/messages")


def text_of(message: dict[str, Any]) -> str | None:
    blocks = [
        b.get("text")
        for b in message.get("content") or []
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    texts = [t for t in blocks if isinstance(t, str)]
    return "".join(texts) if blocks and len(texts) == len(blocks) else None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@check(
    "messages.create",
    "a message: id, type, role, text content blocks, a stop_reason, stop_sequence and usage",
    reference=REFERENCE,
    needs=("messages",),
)
def create_fields(ctx: CheckContext) -> str:
    """The anthropic SDK's ``Message`` model; ``stop_sequence`` is part of it, null unless a stop
    sequence ended the turn."""
    ex, m = create(ctx)
    problems = [
        f"{k} is {m.get(k)!r}"
        for k, want in (("type", "message"), ("role", "assistant"))
        if m.get(k) != want
    ]
    if not isinstance(m.get("id"), str) or not m.get("id"):
        problems.append(f"id is {m.get('id')!r}")
    if text_of(m) is None:
        problems.append(f"content has no text block: {m.get('content')!r}")
    if m.get("stop_reason") not in STOP_REASONS:
        problems.append(f"stop_reason is {m.get('stop_reason')!r}")
    if "stop_sequence" not in m or m["stop_sequence"] is not None:
        problems.append(
            f"stop_sequence is {m.get('stop_sequence', 'missing')!r} with stop_reason "
            f"{m.get('stop_reason')!r}"
        )
    u = m.get("usage") or {}
    if not (
        isinstance(u, dict)
        and _count(u.get("input_tokens"))
        and _count(u.get("output_tokens"))
        and 0 < u["output_tokens"] <= LIMIT
    ):
        problems.append(f"usage is {u!r}")
    ctx.expect(not problems, f"a well-formed message (max_tokens {LIMIT})", "; ".join(problems), ex)
    return (
        f"a message with id, text {shown(text_of(m))}, stop_reason {m['stop_reason']!r}, "
        "stop_sequence null, usage"
        f" {m['usage']}"
    )


@check(
    "messages.model",
    "the message and its stream's message_start name the model asked for (or an alias /v1/models "
    "lists)",
    reference=REFERENCE,
    needs=("messages",),
)
def model(ctx: CheckContext) -> str:
    """Claude clients read the ``Message``'s ``model`` (message_start's, when streaming) to log who
    answered.
    """
    ex, m = create(ctx)
    stream = ctx.offered("messages", ctx.stream(PATH, body(ctx), terminated=False))
    events = ctx.expect_typed_events(stream, "a streamed message")
    # message_start carries the message
    named = [object_or_empty(e.get("message")).get("model") for e in events]
    return judge_model_names(ctx, "messages", (ex, m), (stream, named))


@check(
    "messages.stop-sequence",
    "a stop sequence ends the turn: stop_reason stop_sequence, the sequence named, the text cut "
    "before it",
    reference=REFERENCE,
    needs=("messages",),
)
def stop_sequence(ctx: CheckContext) -> str:
    """Agents stop generation on their own markers and read which one fired."""
    _, free = create(ctx, max_tokens=24)
    text = text_of(free) or ""
    stop = next((ch for ch in text[3:] if not ch.isspace()), None)
    ctx.expect(stop is not None, "a greedy text long enough to pick a stop sequence from", text, _)
    assert stop is not None
    ex, m = create(ctx, max_tokens=24, stop_sequences=[stop])
    got = {
        "stop_reason": m.get("stop_reason"),
        "stop_sequence": m.get("stop_sequence"),
        "text": text_of(m),
    }
    want = {"stop_reason": "stop_sequence", "stop_sequence": stop, "text": text[: text.index(stop)]}
    ctx.expect(got == want, str(want), got, ex)
    return (
        f"stop_sequences [{stop!r}]: stop_reason 'stop_sequence', the sequence named, text "
        f"{shown(want['text'])}"
    )


@check(
    "messages.stream-events",
    "a stream: message_start, content blocks with text deltas, message_delta with the stop "
    "reason, message_stop",
    reference=REFERENCE,
    needs=("messages",),
)
def stream_events(ctx: CheckContext) -> str:
    """The SDK's ``messages.stream`` builds the message from exactly this sequence; ping events may
    come anywhere.
    """
    _, whole = create(ctx)
    ex = ctx.offered("messages", ctx.stream(PATH, body(ctx), terminated=False))
    events = [e for e in ctx.expect_typed_events(ex, "a streamed message") if e["type"] != "ping"]
    kinds = [e["type"] for e in events]
    ranks = [STREAM_ORDER.index(k) if k in STREAM_ORDER else -1 for k in kinds]
    order_ok = (
        kinds[:1] == ["message_start"]
        and kinds[-1:] == ["message_stop"]
        and kinds.count("message_delta") == 1
        and -1 not in ranks
    )
    blocks_ok = all(ranks[i] >= 1 and ranks[i] <= 3 for i in range(1, len(kinds) - 2)) and kinds[
        -2:-1
    ] == ["message_delta"]
    ctx.expect(order_ok and blocks_ok, " -> ".join(STREAM_ORDER), " -> ".join(kinds), ex)
    started = {e.get("index") for e in events if e["type"] == "content_block_start"}
    stopped = {e.get("index") for e in events if e["type"] == "content_block_stop"}
    strays = [
        e.get("index")
        for e in events
        if e["type"] == "content_block_delta" and e.get("index") not in started
    ]
    blocks = {
        "started": sorted(map(str, started)),
        "stopped": sorted(map(str, stopped)),
        "stray deltas": strays,
    }
    ctx.expect(
        started == stopped and not strays,
        "every delta's index opened by content_block_start and closed by content_block_stop",
        blocks,
        ex,
    )
    text = "".join(
        str(object_or_empty(e.get("delta")).get("text", ""))
        for e in events
        if e["type"] == "content_block_delta"
    )
    final = next(e for e in events if e["type"] == "message_delta")
    got = {
        "text": text,
        "stop_reason": object_or_empty(final.get("delta")).get("stop_reason"),
        "output_tokens": object_or_empty(final.get("usage")).get("output_tokens"),
    }
    want = {
        "text": text_of(whole),
        "stop_reason": whole.get("stop_reason"),
        "output_tokens": object_or_empty(whole.get("usage")).get("output_tokens"),
    }
    ctx.expect(got == want, f"the non-streamed message's {want}", got, ex)
    return (
        f"{len(events)} events in order ({len(started)} content block(s)), text, stop_reason and "
        "output_tokens of the"
        " non-streamed message"
    )


@check(
    "messages.count-tokens",
    "/v1/messages/count_tokens counts what the message bills as usage.input_tokens",
    reference=REFERENCE,
    needs=("messages",),
)
def count_tokens(ctx: CheckContext) -> str:
    """Clients trim history to a budget with count_tokens before they send."""
    counted = ctx.offered(
        "messages", ctx.post(f"{PATH}/count_tokens", {"model": ctx.model, "messages": ASK})
    )
    n = ctx.expect_json_object(counted, "POST /v1/messages/count_tokens").get("input_tokens")
    _, m = create(ctx)
    billed = object_or_empty(m.get("usage")).get("input_tokens")
    ctx.expect(
        _count(n) and n == billed,
        f"input_tokens = the message's usage.input_tokens ({billed})",
        n,
        counted,
    )
    return f"count_tokens {n} = the message's usage.input_tokens"


def anthropic_error_problems(data: Any) -> list[str]:
    """``{"type": "error", "error": {"type", "message"}}``: what the anthropic SDK turns into
    ``BadRequestError``.
    """
    if (
        not isinstance(data, dict)
        or data.get("type") != "error"
        or not isinstance(data.get("error"), dict)
    ):
        return ['the body is not {"type": "error", "error": {...}}']
    err = data["error"]
    return [
        f"error.{k} is not a non-empty string"
        for k in ("type", "message")
        if not isinstance(err.get(k), str) or not err.get(k)
    ]


@check(
    "messages.errors",
    "bad input gets 4xx with the Anthropic error shape",
    reference=REFERENCE,
    needs=("messages",),
)
def errors(ctx: CheckContext) -> str:
    """Anthropic clients read ``error.type`` (invalid_request_error, ...), not the OpenAI
    envelope.
    """
    ctx.control(ctx.post(PATH, body(ctx)), "the same message with max_tokens", feature="messages")
    bad = ctx.post(PATH, {"model": ctx.model, "messages": ASK})  # max_tokens is required
    ctx.expect_client_error(bad, "a message without max_tokens")
    ctx.expect_envelope(
        bad,
        anthropic_error_problems,
        'the Anthropic error shape {"type": "error", "error": {"type", "message"}}',
    )
    return (
        f"a message without max_tokens: HTTP {bad.status}, error.type "
        f"{bad.data['error']['type']!r}; a message with it"
        " answered"
    )


# The request rules of the Anthropic API reference (Messages, create; Errors). A request that breaks
# one is answered HTTP 400 with error.type "invalid_request_error" in {"type": "error", "error":
# {...}}. Each check first sees the same request without the fault answered with a message
# (ctx.control): a server that refuses everything shows nothing.
RULES_REFERENCE = (
    "Anthropic API reference: Messages (create: body parameters); Errors (400 "
    "invalid_request_error)"
)


def minimal(ctx: CheckContext, **params: Any) -> dict[str, Any]:
    """The three required fields and nothing else, so a fault is the one parameter added (no
    temperature with top_p: the reference asks for one or the other)."""
    return {"model": ctx.model, "max_tokens": LIMIT, "messages": ASK, **params}


def expect_invalid_request(ctx: CheckContext, ex: Exchange, what: str) -> None:
    """HTTP 400, then Anthropic's error shape with error.type 'invalid_request_error': two findings,
    so the shape is judged (and declared) apart from the status."""
    ctx.expect(ex.status == 400, f"HTTP 400 for {what}", f"HTTP {ex.status}: {ex.text}", ex)
    problems = anthropic_error_problems(ex.data)
    if not problems and ex.data["error"]["type"] != "invalid_request_error":
        problems = [f"error.type is {ex.data['error']['type']!r}, not 'invalid_request_error'"]
    ctx.expect(
        not problems,
        "the Anthropic error shape "
        '{"type": "error", "error": {"type": "invalid_request_error", "message"}} for'
        f" {what}",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )


def refusals(ctx: CheckContext, cases: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """Each case: the request without the fault (a control, answered with a message), then with it
    (refused).
    """
    for what, (good, bad) in cases.items():
        ctx.control(
            ctx.post(PATH, good), f"the same message without the fault ({what})", feature="messages"
        )
        expect_invalid_request(ctx, ctx.post(PATH, bad), what)
    return (
        f"HTTP 400 invalid_request_error for {', '.join(cases)}; each answered with a message "
        "without its fault"
    )


@check(
    "messages.parameter-ranges",
    "temperature or top_p above 1, a negative top_k or max_tokens get HTTP 400 "
    "invalid_request_error",
    reference=RULES_REFERENCE,
    needs=("messages",),
)
def parameter_ranges(ctx: CheckContext) -> str:
    """Anthropic's ranges are not OpenAI's: temperature runs from 0 to 1 (OpenAI's to 2), top_p from
    0 to 1, top_k from 0 up, max_tokens from 0 up (0 only fills the prompt cache). A server that
    takes temperature 1.5 on /v1/messages applies another API's rules and samples hotter than any
    Anthropic client can ask for."""
    cases = {
        f"{name}={bad}": (minimal(ctx, **{name: good}), minimal(ctx, **{name: bad}))
        for name, good, bad in (
            ("temperature", 1.0, 1.5),
            ("top_p", 0.9, 1.5),
            ("top_k", 5, -1),
            ("max_tokens", 4, -1),
        )
    }
    return refusals(ctx, cases)


@check(
    "messages.roles",
    "a message whose role is neither user nor assistant gets HTTP 400 invalid_request_error",
    reference=RULES_REFERENCE,
    needs=("messages",),
)
def roles(ctx: CheckContext) -> str:
    """Each input message has role user or assistant (the system prompt is the top-level ``system``
    field); OpenAI's ``developer`` and ``tool`` roles, which a client ported from the OpenAI API
    sends, are not Anthropic's. A ``system`` message is not judged: the reference says there is no
    such role, but the anthropic SDK 2.17 types one (SystemMessageParam) and vLLM 0.32 accepts it.
    """
    turns = [
        {"role": "user", "content": "Hello there."},
        {"role": "assistant", "content": "Hi, how can I help?"},
        *ASK,
    ]
    cases = {
        f"a {role!r} message": (
            minimal(ctx, messages=turns),
            minimal(ctx, messages=[turns[0], {**turns[1], "role": role}, *ASK]),
        )
        for role in ("developer", "tool")
    }
    return refusals(ctx, cases)


@check(
    "messages.required-fields",
    "a message without model or without messages gets HTTP 400 invalid_request_error",
    reference=RULES_REFERENCE,
    needs=("messages",),
)
def required_fields(ctx: CheckContext) -> str:
    """model, max_tokens and messages are required; a server that fills a missing model in answers a
    request the API refuses. (Without max_tokens is ``messages.errors``'s request.)"""
    cases = {
        f"no {name}": (minimal(ctx), {k: v for k, v in minimal(ctx).items() if k != name})
        for name in ("model", "messages")
    }
    return refusals(ctx, cases)
