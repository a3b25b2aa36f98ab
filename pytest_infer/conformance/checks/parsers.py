"""The engine's tool-call and reasoning parsers, judged on scripted output (conformance/scripts.py;
docs/parsers.md).

Each check forces the text a model of the parser's family writes (calls, plain text, a thinking
block) through the engine's own constrained decoding, and judges what the engine's parser makes of
it, answered and streamed. The parser is the one the server was launched with (``--infer-parser``,
or the adapter's default for the built-in model); a parser, or an engine, that scripted output
cannot drive is "not exercised: not drivable". Before judging, two controls show the script reaches
the output: on /v1/completions, where no parser runs, the forced text comes back verbatim; on the
chat route the check judges, answered and streamed, a plain scripted sentence in the same request
comes back. Without them a failure could be the forcing's, and nothing parsed because nothing was
written would pass.
"""

from __future__ import annotations

import json
from typing import Any

from ...outcomes import NotExercised
from ..context import CheckContext, Exchange, StreamExchange, object_or_empty
from ..failures import Inconclusive, trim
from ..registry import check
from ..scripts import (
    MARKER_BIAS,
    Call,
    Script,
    Scripting,
    literal_regex,
    not_drivable_reasoning,
    not_drivable_tool,
    reasoning_script,
    thinking_first,
)
from ..scripts import tool_script as bare_tool_script
from .calls import TIME, WEATHER, assemble

REFERENCE = (
    "openai-openapi ChatCompletionMessageToolCall, ChatCompletionMessageToolCallChunk; "
    "the engine's parser docs"
)
REASONING_NAMES = ("reasoning", "reasoning_content")
REASONING_REFERENCE = (
    "vLLM reasoning outputs (reasoning, formerly reasoning_content); DeepSeek API reasoning_content"
)
ASK = [{"role": "user", "content": "What is the weather in Paris? And the time in UTC?"}]
FORECAST = {
    "type": "function",
    "function": {
        "name": "get_forecast",
        "description": "Forecast for a place, filtered.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "days": {"type": "array", "items": {"type": "integer"}},
                        "units": {"type": "object"},
                    },
                }
            },
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER, TIME, FORECAST]
PARIS, UTC = Call("get_weather", {"city": "Paris"}), Call("get_time", {"tz": "UTC"})
NESTED = Call(
    "get_forecast",
    {"query": {"city": "Paris", "days": [1, 2], "units": {"temp": "C", "wind": "km/h"}}},
)
# a quote, a backslash, a tab inside, non-ASCII from three scripts: what a JSON or Python escaper
# must get right
ESCAPED = Call("get_weather", {"city": 'Zürich "Nord" \\ 東京\tΑθήνα'})
PLAIN = "It is sunny in Paris today."
# no markup: what no parser may take, whatever it reads
CONTROL = "The script reaches the chat route."


def tool_script(
    ctx: CheckContext, parser: str, calls: tuple[Call, ...], content: str = ""
) -> Script:
    """The calls in the tool parser's format, after a thinking block where the reasoning parser
    expects one.
    """
    return thinking_first(
        (ctx.scripting or Scripting()).reasoning_parser, bare_tool_script(parser, calls, content)
    )


def _scripting(ctx: CheckContext, kind: str) -> tuple[Scripting, str]:
    """The server's scripting and the parser of ``kind`` it runs, or "not drivable" with the
    reason.
    """
    scripting = ctx.scripting or Scripting()
    parser = scripting.tool_parser if kind == "tool" else scripting.reasoning_parser
    if not parser:
        raise NotExercised(
            f"not drivable: no {kind} parser known for this server (name the one it runs with "
            "--infer-parser)"
        )
    why = scripting.forcing() or (
        not_drivable_tool(parser) if kind == "tool" else not_drivable_reasoning(parser)
    )
    if why:
        raise NotExercised(f"not drivable: {why}")
    return scripting, parser


def _marker_bias(ctx: CheckContext, scripting: Scripting, script: Script) -> dict[str, int]:
    """``logit_bias`` lifting each markup token of the script, so the grammar's choice falls on the
    one token a real model writes; the ids come from the server's own tokenizer (/tokenize)."""
    bias = {}
    for marker in script.markers:
        if marker not in scripting.markers:
            ex = ctx.post(
                "/tokenize", {"model": ctx.model, "prompt": marker, "add_special_tokens": False}
            )
            tokens = (ex.data or {}).get("tokens") if ex.ok and isinstance(ex.data, dict) else None
            scripting.markers[marker] = (
                tokens[0]
                if isinstance(tokens, list) and len(tokens) == 1 and isinstance(tokens[0], int)
                else None
            )
        token = scripting.markers[marker]
        if token is None:
            raise NotExercised(
                f"not drivable: the model has no single token for {marker!r} (its parser reads it "
                "as one), or no"
                " /tokenize"
            )
        bias[str(token)] = MARKER_BIAS
    return bias


def scripted_body(
    ctx: CheckContext, scripting: Scripting, script: Script, **params: Any
) -> dict[str, Any]:
    """A chat request whose answer is ``script.text``, forced, at temperature 0, with room to finish
    it.
    """
    assert scripting.force is not None
    body = ctx.chat_body(
        **{
            "messages": ASK,
            "temperature": 0,
            "max_tokens": len(script.text.encode()) + 16,
            **params,
        }
    )
    body |= scripting.force(literal_regex(script.text)) or {}
    if (
        script.reasoning
        # asked to think, as Qwen3's clients ask; a server may default thinking off (adapters'
        # THINKING_OFF)
    ):
        body["chat_template_kwargs"] = {"enable_thinking": True}
    if script.markers:
        body["logit_bias"] = _marker_bias(ctx, scripting, script)
    return body


def _message(ctx: CheckContext, ex: Exchange, what: str) -> tuple[dict[str, Any], Any]:
    choice = ((ctx.expect_json_object(ex, what).get("choices") or [{}])[0]) or {}
    if choice.get("finish_reason") == "length":
        raise Inconclusive(f"the forced text did not finish within max_tokens ({what}): {ex.curl}")
    return choice.get("message") or {}, choice.get("finish_reason")


def _control(ctx: CheckContext, scripting: Scripting, script: Script) -> None:
    """The forced text comes back verbatim from /v1/completions, where no parser runs: the forcing
    works, so a deviation in the chat answer is the parser's. (A chat request without tools is no
    control: a parser that also reads tool markup, as vLLM's mistral one does, may take the text
    even then.)"""
    body = {
        k: v
        for k, v in scripted_body(ctx, scripting, script).items()
        if k not in ("messages", "chat_template_kwargs")
    }
    ex = ctx.post("/v1/completions", {**body, "prompt": ASK[0]["content"]})
    choice = (
        (ex.data.get("choices") or [{}])[0] if ex.ok and isinstance(ex.data, dict) else None
    ) or {}
    if choice.get("text") != script.text:
        raise Inconclusive(
            f"the forcing did not take: asked for {script.text!r}, /v1/completions wrote"
            f" {trim(choice.get('text', ex.text), 300)!r}: {ex.curl}"
        )


def _written(fields: list[dict[str, Any]]) -> str:
    """All the text of messages or stream deltas: reasoning and content, in order."""
    return "".join(str(f.get(k) or "") for f in fields for k in (*REASONING_NAMES, "content"))


def _chat_control(
    ctx: CheckContext, scripting: Scripting, *, streamed: bool, **params: Any
) -> None:
    """The chat route the check judges writes a plain scripted sentence in the same request (its
    tools offered under tool_choice 'none', where no parser runs), answered and, where the check
    judges a stream, streamed: the script reaches the output there. Otherwise the check is
    inconclusive, naming this control. Sent after the judged request's status is seen, so a refused
    request stays a failure, and before anything parsed is judged."""
    # after a thinking block where the judged scripts have one
    plain = tool_script(ctx, "", (), CONTROL)
    body = scripted_body(ctx, scripting, plain, **params)
    if body.get("tools"):
        body["tool_choice"] = "none"
    answered = ctx.post("/v1/chat/completions", body)
    if body.get("tools") and "messages" not in params:
        ctx.offered("tools", answered)
    choices = (
        answered.data.get("choices") if answered.ok and isinstance(answered.data, dict) else None
    ) or [{}]
    tries: list[tuple[str, Exchange | StreamExchange]] = [
        (_written([object_or_empty(object_or_empty(choices[0]).get("message"))]), answered)
    ]
    if streamed:
        stream = ctx.stream("/v1/chat/completions", body)
        deltas = [
            object_or_empty(ch.get("delta"))
            for c in stream.sse.chunks
            for ch in c.get("choices") or []
        ]
        tries.append((_written(deltas), stream))
    for written, where in tries:
        if CONTROL not in written:
            raise Inconclusive(
                "the scripted-output control on /v1/chat/completions failed: asked for "
                f"{plain.text!r}, the chat route"
                f" wrote {trim(written, 300)!r}, so the script does not reach what this check "
                f"judges: {where.curl}"
            )


def _streamed(
    ctx: CheckContext, body: dict[str, Any]
) -> tuple[StreamExchange, dict[int, dict[str, Any]], str, list[Any]]:
    ex = ctx.stream("/v1/chat/completions", body)
    chunks = ctx.expect_stream(ex, "the scripted answer, streamed")
    calls, problems = assemble(chunks)
    ctx.expect(
        not problems,
        "stable indices with each call's id on its first fragment",
        "; ".join(problems),
        ex,
    )
    choices = [ch for c in chunks for ch in c.get("choices") or []]
    content = "".join(str((ch.get("delta") or {}).get("content") or "") for ch in choices)
    reasons = [ch.get("finish_reason") for ch in choices if ch.get("finish_reason")]
    return ex, calls, content, reasons


def _arguments(ctx: CheckContext, raw: Any, where: Exchange | StreamExchange) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        ctx.fail("arguments that are a JSON string", raw, where)


def _judge_calls(
    ctx: CheckContext,
    script: Script,
    calls: list[dict[str, Any]],
    where: Exchange | StreamExchange,
    how: str,
) -> None:
    want = [(c.name, c.arguments) for c in script.calls]
    got = [
        (
            (c.get("function") or {}).get("name"),
            _arguments(ctx, (c.get("function") or {}).get("arguments"), where),
        )
        for c in calls
    ]
    ctx.expect(
        got == want,
        f"the scripted calls {json.dumps(want, ensure_ascii=False)} parsed ({how})",
        json.dumps(got, ensure_ascii=False),
        where,
    )
    ids = [c.get("id") for c in calls]
    ctx.expect(
        all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids),
        f"a distinct id per call ({how})",
        ids,
        where,
    )


def judge_tool_script(
    ctx: CheckContext, script: Script, scripting: Scripting, **params: Any
) -> str:
    """The script parsed into its calls (and its content), answered and streamed alike: the streamed
    argument fragments must join into JSON equal to the scripted arguments, as the answered
    arguments must be (equal as JSON, not as text: a server may space or escape them its own way).
    """
    _control(ctx, scripting, script)
    body = scripted_body(ctx, scripting, script, tools=TOOLS, **{"tool_choice": "auto", **params})
    if body["tool_choice"] is None:  # left out: the API's default with tools offered
        del body["tool_choice"]
    ex = ctx.post("/v1/chat/completions", body)
    # a refused tool result is a broken tool loop, not tools unsupported
    if "messages" not in params:
        ctx.offered("tools", ex)
    message, reason = _message(ctx, ex, "the scripted answer")
    _chat_control(ctx, scripting, streamed=True, tools=TOOLS, **params)
    calls = message.get("tool_calls") or []
    _judge_calls(ctx, script, calls, ex, "answered")
    ctx.expect(reason == "tool_calls", "finish_reason 'tool_calls'", reason, ex)
    ctx.expect(
        (message.get("content") or "") == script.content,
        f"content {script.content!r} (the text before the calls)",
        message.get("content"),
        ex,
    )
    stream, joined, content, reasons = _streamed(ctx, body)
    streamed = [joined[i] for i in sorted(joined)]
    _judge_calls(ctx, script, streamed, stream, "streamed")
    answered_args = [(c.get("function") or {}).get("arguments") for c in calls]
    ctx.expect(
        reasons == ["tool_calls"], "one finish_reason 'tool_calls' in the stream", reasons, stream
    )
    ctx.expect(content == script.content, f"streamed content {script.content!r}", content, stream)
    return (
        f"{scripting.tool_parser}: {len(script.calls)} scripted call(s) "
        f"{', '.join(c.name for c in script.calls)}"
        f" parsed alike answered and streamed: {answered_args}"
    )


# the scripts the consistency suite sends alone and in a batch (consistency/underload.py)
UNDER_LOAD = {
    "one call": (PARIS,),
    "two calls": (PARIS, UTC),
    "nested arguments": (NESTED,),
    "escaped arguments": (ESCAPED,),
    "plain text": (),
}


def scripted_tool_requests(ctx: CheckContext) -> dict[str, tuple[Script, dict[str, Any]]]:
    """Each of ``UNDER_LOAD``'s scripts with the chat request that forces it, tools offered under
    tool choice "auto": a correct parser gives back exactly the script's calls and content.
    ``NotExercised`` where the server's tool parser cannot be driven."""
    scripting, parser = _scripting(ctx, "tool")
    out = {}
    for name, calls in UNDER_LOAD.items():
        script = tool_script(ctx, parser, calls, "" if calls else PLAIN)
        extra = {"parallel_tool_calls": True} if len(calls) > 1 else {}
        body = scripted_body(ctx, scripting, script, tools=TOOLS, tool_choice="auto", **extra)
        out[name] = (script, body)
    return out


def parsed(data: Any) -> tuple[list[list[Any]], str]:
    """The calls (name, arguments read as JSON where they are) and content of a chat completion's
    first choice."""
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = object_or_empty(object_or_empty(first).get("message"))
    calls = []
    for call in message.get("tool_calls") or []:
        function = object_or_empty(object_or_empty(call).get("function"))
        arguments: Any = function.get("arguments")
        try:
            arguments = json.loads(arguments)
        except (TypeError, ValueError):
            pass  # kept as sent: not a JSON string
        calls.append([function.get("name"), arguments])
    return calls, str(message.get("content") or "")


def parsed_as_scripted(script: Script, data: Any) -> bool:
    """A chat completion carries exactly ``script``'s calls (arguments equal as JSON) and
    content."""
    return parsed(data) == ([[c.name, c.arguments] for c in script.calls], script.content)


@check(
    "parsers.tool-single",
    "the tool parser turns one scripted call into one call, answered and streamed",
    reference=REFERENCE,
    needs=("tools",),
)
def tool_single(ctx: CheckContext) -> str:
    """The call a model writes in its parser's format must reach the client as tool_calls, not as
    text.
    """
    scripting, parser = _scripting(ctx, "tool")
    return judge_tool_script(ctx, tool_script(ctx, parser, (PARIS,)), scripting)


@check(
    "parsers.tool-parallel",
    "the tool parser turns two scripted calls into two calls, indices 0 and 1",
    reference=f"{REFERENCE}; sglang#6310",
    needs=("tools",),
)
def tool_parallel(ctx: CheckContext) -> str:
    """Parallel calls are where streamed parsers lose a call or merge two."""
    scripting, parser = _scripting(ctx, "tool")
    return judge_tool_script(
        ctx, tool_script(ctx, parser, (PARIS, UTC)), scripting, parallel_tool_calls=True
    )


@check(
    "parsers.tool-nested",
    "nested JSON arguments (objects, arrays) survive the tool parser",
    reference=REFERENCE,
    needs=("tools",),
)
def tool_nested(ctx: CheckContext) -> str:
    """A parser that scans for the first closing brace cuts nested arguments short."""
    scripting, parser = _scripting(ctx, "tool")
    return judge_tool_script(ctx, tool_script(ctx, parser, (NESTED,)), scripting)


@check(
    "parsers.tool-escapes",
    "quotes, backslashes, tabs and non-ASCII in arguments survive the tool parser",
    reference=REFERENCE,
    needs=("tools",),
)
def tool_escapes(ctx: CheckContext) -> str:
    """Arguments are re-serialized by the parser: an escape lost or doubled changes what the tool
    receives.
    """
    scripting, parser = _scripting(ctx, "tool")
    return judge_tool_script(ctx, tool_script(ctx, parser, (ESCAPED,)), scripting)


@check(
    "parsers.tool-no-call",
    "plain text with tools offered stays content: no call, finish_reason 'stop'",
    reference=REFERENCE,
    needs=("tools",),
)
def tool_no_call(ctx: CheckContext) -> str:
    """Most answers of an agent are text; a parser that holds it back or invents a call breaks every
    turn.
    """
    scripting, parser = _scripting(ctx, "tool")
    script = tool_script(ctx, parser, (), PLAIN)
    _control(ctx, scripting, script)
    body = scripted_body(ctx, scripting, script, tools=TOOLS, tool_choice="auto")
    ex = ctx.offered("tools", ctx.post("/v1/chat/completions", body))
    message, reason = _message(ctx, ex, "a scripted text answer with tools offered")
    _chat_control(ctx, scripting, streamed=True, tools=TOOLS)
    ctx.expect(
        not message.get("tool_calls") and reason == "stop",
        "no tool_calls and finish_reason 'stop'",
        {"finish_reason": reason, "tool_calls": message.get("tool_calls")},
        ex,
    )
    ctx.expect(message.get("content") == PLAIN, f"content {PLAIN!r}", message.get("content"), ex)
    stream, calls, content, reasons = _streamed(ctx, body)
    ctx.expect(
        not calls and reasons == ["stop"],
        "no call fragments and finish_reason 'stop' in the stream",
        {"calls": calls, "finish_reasons": reasons},
        stream,
    )
    ctx.expect(content == PLAIN, f"streamed content {PLAIN!r}", content, stream)
    return (
        f"{parser}: a scripted text answer with 3 tools offered stayed content, answered and "
        f"streamed: {PLAIN!r}"
    )


@check(
    "parsers.tool-choice-none",
    "tool_choice 'none' leaves a scripted call unparsed: no tool_calls",
    reference=REFERENCE,
    needs=("tools",),
)
def tool_choice_none(ctx: CheckContext) -> str:
    """'none' promises the client no call; a parser that runs anyway hands it one it did not ask
    for.
    """
    scripting, parser = _scripting(ctx, "tool")
    script = tool_script(ctx, parser, (PARIS,))
    _control(ctx, scripting, script)
    body = scripted_body(ctx, scripting, script, tools=TOOLS, tool_choice="none")
    ex = ctx.offered("tools", ctx.post("/v1/chat/completions", body))
    message, reason = _message(ctx, ex, "a scripted call under tool_choice 'none'")
    _chat_control(ctx, scripting, streamed=True, tools=TOOLS)
    ctx.expect(
        not message.get("tool_calls") and reason != "tool_calls",
        "no tool_calls under tool_choice 'none'",
        {"finish_reason": reason, "tool_calls": message.get("tool_calls")},
        ex,
    )
    stream, calls, _, reasons = _streamed(ctx, body)
    ctx.expect(
        not calls and "tool_calls" not in reasons,
        "no call fragments in the stream under tool_choice 'none'",
        {"calls": calls, "finish_reasons": reasons},
        stream,
    )
    return (
        f"{parser}: a scripted call under tool_choice 'none' came back as text, answered and "
        "streamed:"
        f" {message.get('content')!r}"
    )


@check(
    "parsers.tool-after-result",
    "after a tool result is fed back, the next scripted call is parsed",
    reference=f"{REFERENCE}; ChatCompletionRequestToolMessage",
    needs=("tools",),
)
def tool_after_result(ctx: CheckContext) -> str:
    """The second turn of every tool loop: the template renders the result, the parser meets the
    next call.
    """
    scripting, parser = _scripting(ctx, "tool")
    history = ASK + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature_c": 18}'},
    ]
    return judge_tool_script(ctx, tool_script(ctx, parser, (UTC,)), scripting, messages=history)


def _reasoning_of(fields: dict[str, Any]) -> dict[str, str]:
    return {k: str(fields[k]) for k in REASONING_NAMES if fields.get(k)}


def _reasoning_answer(
    ctx: CheckContext, *, streamed: bool
) -> tuple[Script, dict[str, Any], Exchange, dict[str, Any]]:
    """A scripted thinking block and answer, sent once, and the chat control (``streamed``: for a
    check that judges the stream too)."""
    scripting, parser = _scripting(ctx, "reasoning")
    script = reasoning_script(parser, "The user asks about Paris; it is in France.", PLAIN)
    body = scripted_body(ctx, scripting, script)
    ex = ctx.post("/v1/chat/completions", body)
    message, _ = _message(ctx, ex, "a scripted thinking block and answer")
    _chat_control(ctx, scripting, streamed=streamed, chat_template_kwargs={"enable_thinking": True})
    return script, body, ex, message


@check(
    "parsers.reasoning-split",
    "the reasoning parser puts the thinking under one reasoning field and the answer, without "
    "markup, in content",
    reference=REASONING_REFERENCE,
)
def reasoning_split(ctx: CheckContext) -> str:
    """Thinking left in content is shown to the user; an answer swallowed as reasoning is lost to
    them.
    """
    script, _, ex, message = _reasoning_answer(ctx, streamed=False)
    named = _reasoning_of(message)
    ctx.expect(
        list(named.values()) == [script.reasoning],
        f"the thinking {script.reasoning!r} under one of {REASONING_NAMES}",
        named,
        ex,
    )
    ctx.expect(
        message.get("content") == script.content,
        f"content {script.content!r}, the markup parsed out",
        message.get("content"),
        ex,
    )
    return (
        f"{(ctx.scripting or Scripting()).reasoning_parser}: scripted thinking under "
        f"{next(iter(named))!r}, answer"
        f" alone in content: {script.content!r}"
    )


@check(
    "parsers.reasoning-stream",
    "streamed reasoning and content join into the answered ones, under the same field name",
    reference=f"{REASONING_REFERENCE}; chat.completion.chunk delta",
)
def reasoning_stream(ctx: CheckContext) -> str:
    """A client that reads the stream must see what one that waits for the answer sees."""
    script, body, ex, message = _reasoning_answer(ctx, streamed=True)
    stream = ctx.stream("/v1/chat/completions", body)
    deltas = [
        ch.get("delta") or {}
        for c in ctx.expect_stream(stream, "the scripted thinking, streamed")
        for ch in c.get("choices") or []
    ]
    streamed: dict[str, str] = {}
    for delta in deltas:
        for name, piece in _reasoning_of(delta).items():
            streamed[name] = streamed.get(name, "") + piece
    content = "".join(str(d.get("content") or "") for d in deltas)
    answered = _reasoning_of(message)
    ctx.expect(
        streamed == answered,
        "the streamed reasoning to join into the answered one, under its name",
        {"streamed": streamed, "answered": answered},
        stream,
    )
    ctx.expect(
        content == (message.get("content") or ""),
        "the streamed content to join into the answered content",
        content,
        stream,
    )
    ctx.expect(
        not any(m in content for m in script.markers),
        f"no {script.markers} in the streamed content",
        content,
        stream,
    )
    return (
        f"{(ctx.scripting or Scripting()).reasoning_parser}: streamed reasoning {sorted(streamed)} "
        "and content joined"
        f" into the answer's ({len(content)} chars)"
    )


def scripted_auto(ctx: CheckContext) -> str:
    """``tools.auto`` where the model decides nothing: a call scripted in the tool parser's format,
    with tool_choice auto and with none given; "not drivable" where scripted output cannot reach the
    parser."""
    scripting, parser = _scripting(ctx, "tool")
    script = tool_script(ctx, parser, (PARIS,))
    judged = [
        judge_tool_script(ctx, script, scripting, tool_choice=choice) for choice in ("auto", None)
    ]
    return f"tool_choice 'auto' and none given, each: {judged[0]}"


def drivable(ctx: CheckContext, kind: str) -> tuple[Scripting, str] | None:
    """The scripting and parser of ``kind`` where scripted output can drive it (None: it cannot)."""
    try:
        return _scripting(ctx, kind)
    except NotExercised:
        return None


def scripted_reasoning_fields(ctx: CheckContext) -> dict[str, Any]:
    """The request fields (messages, forcing, max_tokens) that script a thinking block and an answer
    for the server's reasoning parser; {} where none can be scripted, so a check falls back to the
    model's own text."""
    found = drivable(ctx, "reasoning")
    if found is None:
        return {}
    scripting, parser = found
    try:
        body = scripted_body(
            ctx,
            scripting,
            reasoning_script(parser, "The user asks about Paris; it is in France.", PLAIN),
        )
    except NotExercised:
        return {}
    return {k: v for k, v in body.items() if k != "model"}


def scripted_parallel(ctx: CheckContext) -> str | None:
    """Two scripted calls judged through the server's tool parser (None where scripted output cannot
    drive it).
    """
    found = drivable(ctx, "tool")
    if found is None:
        return None
    scripting, parser = found
    return judge_tool_script(
        ctx, tool_script(ctx, parser, (PARIS, UTC)), scripting, parallel_tool_calls=True
    )
