"""Tools: auto, required, named, none, streamed call fragments, tool results; the built-in model's
auto calls are scripted."""

from __future__ import annotations

import json
from typing import Any

from ...models import TEMPLATE_REFUSAL
from ...outcomes import NotExercised
from ..context import CLIENT_ERRORS, CheckContext, Exchange
from ..failures import Inconclusive
from ..registry import check
from .calls import TIME, WEATHER, assemble
from .chat import shown
from .parsers import scripted_auto, scripted_parallel

SPEC = "openai-openapi ChatCompletionMessageToolCall, ChatCompletionToolChoiceOption"
ASK = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]


def tool_request(
    ctx: CheckContext, tool_choice: Any, *, seed: int = 1234, **params: Any
) -> dict[str, Any]:
    """A weather question with two tools; seeded sampling, so a random model's constrained call ends
    (a whole forced call with a 20-character argument takes about 75 tokens of a byte-level
    tokenizer)."""
    body = ctx.chat_body(
        **{
            "messages": ASK,
            "tools": [WEATHER, TIME],
            "max_tokens": 128,
            "temperature": 0.8,
            "seed": seed,
            **params,
        }
    )
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    return body


def call_problems(calls: Any, names: tuple[str, ...]) -> list[str]:
    if not isinstance(calls, list) or not calls:
        return [f"tool_calls is {calls!r}, not a non-empty list"]
    problems = []
    for i, call in enumerate(calls):
        fn = call.get("function") or {} if isinstance(call, dict) else {}
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call.get("id"):
            problems.append(f"call {i} has no id")
        if not isinstance(call, dict) or call.get("type") != "function":
            problems.append(
                f"call {i} type is {call.get('type') if isinstance(call, dict) else call!r}"
            )
        if not isinstance(fn, dict):
            problems.append(f"call {i} function is {fn!r}, not an object")
            continue
        if fn.get("name") not in names:
            problems.append(f"call {i} names {fn.get('name')!r}, not one of {names}")
        args = fn.get("arguments")
        if not isinstance(args, str):
            problems.append(f"call {i} arguments is {type(args).__name__}, not a JSON string")
        else:
            try:
                json.loads(args)
            except ValueError:
                problems.append(f"call {i} arguments {args!r} is not valid JSON")
    ids = [c.get("id") for c in calls if isinstance(c, dict)]
    # an id may be unhashable (a list)
    if len({json.dumps(i, sort_keys=True, default=repr) for i in ids}) != len(ids):
        problems.append(f"duplicate call ids {ids}")
    return problems


def described(calls: list[Any]) -> str:
    """Calls as evidence: how many, and each one's name and arguments."""
    return f"{len(calls)} call(s) " + ", ".join(
        f"{c['function']['name']}({shown(c['function']['arguments'], 40)})" for c in calls
    )


def no_call(data: dict[str, Any]) -> bool:
    """A forced call that produced no tool_calls is judged at once, not retried, unless it was cut
    off at max_tokens with nothing shown (the server held back a call it could not finish)."""
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    if message.get("tool_calls"):
        return False
    return not (choice.get("finish_reason") == "length" and not message.get("content"))


def forced_call(
    ctx: CheckContext, tool_choice: Any, **params: Any
) -> tuple[Exchange, dict[str, Any]]:
    ex = ctx.seeded(
        lambda s: ctx.post(
            "/v1/chat/completions", tool_request(ctx, tool_choice, seed=s, **params)
        ),
        "tools",
        no_call,
    )
    return ex, ctx.expect_json_object(ex, f"tool_choice={json.dumps(tool_choice)}")


@check(
    "tools.required",
    "tool_choice 'required' yields at least one well-formed call",
    reference=f"{SPEC}; vllm#53255",
    needs=("tools",),
)
def required(ctx: CheckContext) -> str:
    """Agents use 'required' to force an action; no call (or a malformed one) stalls them."""
    ex, data = forced_call(ctx, "required")
    choice = (data.get("choices") or [{}])[0]
    problems = call_problems(
        (choice.get("message") or {}).get("tool_calls"), ("get_weather", "get_time")
    )
    ctx.expect(
        not problems,
        "tool_calls [{id, type: 'function', function: {name, arguments: JSON string}}]",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )
    ctx.expect(
        choice.get("finish_reason") in ("tool_calls", "stop"),
        "finish_reason 'tool_calls' (or 'stop', as OpenAI sends for forced calls)",
        choice.get("finish_reason"),
        ex,
    )
    return (
        f"tool_choice 'required': {described(choice['message']['tool_calls'])}, finish_reason"
        f" {choice['finish_reason']!r}"
    )


@check("tools.named", "a named tool_choice calls that tool", reference=SPEC, needs=("tools",))
def named(ctx: CheckContext) -> str:
    """A named tool_choice is a routing decision the client has made; another tool is wrong."""
    ex, data = forced_call(ctx, {"type": "function", "function": {"name": "get_time"}})
    calls = ((data.get("choices") or [{}])[0].get("message") or {}).get("tool_calls")
    problems = call_problems(calls, ("get_time",))
    ctx.expect(not problems, "tool_calls calling get_time", f"{'; '.join(problems)}: {ex.text}", ex)
    return f"tool_choice get_time: {described(calls or [])}"


@check(
    "tools.none",
    "tool_choice 'none' yields no call and a text answer",
    reference=SPEC,
    needs=("tools",),
)
def none(ctx: CheckContext) -> str:
    """'none' lets a client keep tools in context while asking for prose."""
    ex = ctx.offered(
        "tools", ctx.post("/v1/chat/completions", tool_request(ctx, "none") | {"max_tokens": 8})
    )
    data = ctx.expect_json_object(ex, "tool_choice='none'")
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    ctx.expect(
        not message.get("tool_calls") and choice.get("finish_reason") != "tool_calls",
        "no tool_calls",
        message,
        ex,
    )
    ctx.expect(isinstance(message.get("content"), str), "a string content", message, ex)
    return (
        f"tool_choice 'none': no tool call, finish_reason {choice.get('finish_reason')!r}, content"
        f" {shown(message['content'])}"
    )


@check(
    "tools.stream-fragments",
    "streamed tool calls keep a stable index, send id first, and arguments join into JSON",
    reference="openai-openapi ChatCompletionMessageToolCallChunk; sglang#5661, sglang#6310",
    needs=("tools",),
)
def stream_fragments(ctx: CheckContext) -> str:
    """The SDK's stream accumulator keys fragments by ``index`` and needs the ``id`` up front."""
    for attempt in range(3):
        ex = ctx.stream("/v1/chat/completions", tool_request(ctx, "required", seed=1234 + attempt))
        ctx.offered("tools", ex)
        chunks = ctx.expect_stream(ex, "a streamed tool call")
        reasons = [
            ch.get("finish_reason")
            for c in chunks
            for ch in c.get("choices") or []
            if ch.get("finish_reason")
        ]
        if reasons != ["length"] or not any(
            (ch.get("delta") or {}).get("tool_calls")
            for c in chunks
            for ch in c.get("choices") or []
        ):
            # ended by itself, or already judged: a forced call that streamed no fragment at all
            break
    else:
        raise Inconclusive(f"the model ran to max_tokens in 3 streamed tool calls: {ex.curl}")
    calls, problems = assemble(chunks)
    ctx.expect(
        not problems, "stable indices with the id on the first fragment", "; ".join(problems), ex
    )
    problems = call_problems([calls[i] for i in sorted(calls)], ("get_weather", "get_time"))
    ctx.expect(
        not problems,
        "fragments that join into well-formed calls",
        f"{'; '.join(problems)}; joined: {calls}",
        ex,
    )
    return (
        f"{len(chunks)} chunks joining by index into {described([calls[i] for i in sorted(calls)])}"
    )


@check(
    "tools.result-message",
    "a tool result (role 'tool') in the next turn is accepted",
    reference="openai-openapi ChatCompletionRequestToolMessage",
    needs=("tools",),
)
def result_message(ctx: CheckContext) -> str:
    """Every tool loop sends the result back; a 4xx there ends the conversation."""
    messages = ASK + [
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
    ex = ctx.post(
        "/v1/chat/completions",
        ctx.chat_body(
            messages=messages, tools=[WEATHER], tool_choice="none", max_tokens=8, temperature=0
        ),
    )
    if ctx.no_tools is not None and ex.status in CLIENT_ERRORS and TEMPLATE_REFUSAL in ex.text:
        # the model's own template refusing the turn, passed on; any other 4xx is the server's and
        # judged below
        raise NotExercised(
            f"{ctx.no_tools}: the tool turn was refused (HTTP {ex.status}) by its chat template"
            f" ({TEMPLATE_REFUSAL!r}), as it must be: {ex.curl}"
        )
    data = ctx.expect_json_object(ex, "a conversation with a tool result")
    content = ((data.get("choices") or [{}])[0].get("message") or {}).get("content")
    ctx.expect(isinstance(content, str), "a text answer", ex.text, ex)
    return f"a turn after a tool result answered with text {shown(content)}"


@check(
    "tools.auto",
    "tool_choice auto (and tools without tool_choice) calls the tool for an explicit request",
    reference=f"{SPEC}; TRT-LLM PR #17845 (defaulted to none)",
    needs=("tools",),
)
def auto(ctx: CheckContext) -> str:
    """The default mode of every agent framework; only a real model decides to call, so the built-in
    one's call is scripted and the server's parser judged."""
    if ctx.tiny:
        return scripted_auto(ctx)
    for choice in ("auto", None):
        ex = ctx.offered(
            "tools",
            ctx.post(
                "/v1/chat/completions",
                tool_request(ctx, choice, temperature=0) | {"max_tokens": 256},
            ),
        )
        data = ctx.expect_json_object(ex, f"tool_choice={choice}")
        ch = (data.get("choices") or [{}])[0]
        calls = (ch.get("message") or {}).get("tool_calls")
        if ctx.no_tools is not None and not calls:
            raise NotExercised(
                f"{ctx.no_tools}: it answered without a call, and auto leaves the call to it: "
                f"{ex.curl}"
            )
        problems = call_problems(calls, ("get_weather",))
        ctx.expect(
            not problems and ch.get("finish_reason") == "tool_calls",
            "a get_weather call with finish_reason 'tool_calls'",
            f"{'; '.join(problems)}: {ex.text}",
            ex,
        )
    return (
        "tool_choice 'auto' and no tool_choice: each a get_weather call with finish_reason "
        "'tool_calls'"
    )


PARALLEL_ASK = [
    {
        "role": "user",
        "content": "What is the weather in Paris and the time in Tokyo? Call both tools.",
    }
]


@check(
    "tools.parallel",
    "parallel calls in one answer and in its stream: distinct ids, indices 0..n-1, id first, "
    "arguments that join into"
    " JSON per call",
    reference="openai-openapi parallel_tool_calls, ChatCompletionMessageToolCallChunk; sglang#6310",
    needs=("tools",),
)
def parallel(ctx: CheckContext) -> str:
    """Parallel calls in a stream break again and again (SGLang, LMDeploy, gateways): each index is
    one call.
    """
    ex, data = forced_call(ctx, "required", messages=PARALLEL_ASK, parallel_tool_calls=True)
    calls = ((data.get("choices") or [{}])[0].get("message") or {}).get("tool_calls") or []
    if len(calls) < 2:
        if (scripted := scripted_parallel(ctx)) is not None:
            return scripted  # the evidence of what was judged
        raise NotExercised(
            f"the model made {len(calls)} call(s) for two tools, so there is no parallel call to "
            f"judge: {ex.curl}"
        )
    problems = call_problems(calls, ("get_weather", "get_time"))
    ctx.expect(
        not problems, "well-formed calls with distinct ids", f"{'; '.join(problems)}: {ex.text}", ex
    )
    # the seed of the answer judged above (forced_call may have moved on from 1234)
    seed = ex.body["seed"]
    streamed = ctx.stream(
        "/v1/chat/completions",
        tool_request(ctx, "required", seed=seed, messages=PARALLEL_ASK, parallel_tool_calls=True),
    )
    joined, problems = assemble(ctx.expect_stream(streamed, "streamed parallel calls"))
    ctx.expect(
        not problems and sorted(joined) == list(range(len(joined))),
        "indices 0..n-1, each call's id on its first fragment",
        "; ".join(problems) or sorted(joined),
        streamed,
    )
    problems = call_problems([joined[i] for i in sorted(joined)], ("get_weather", "get_time"))
    ctx.expect(
        not problems,
        "fragments that join into well-formed calls, one per index",
        f"{'; '.join(problems)}; joined: {joined}",
        streamed,
    )
    names = [c["function"]["name"] for c in calls]
    ctx.expect(
        [joined[i]["function"]["name"] for i in sorted(joined)] == names,
        f"the same calls as the non-streamed answer ({names})",
        joined,
        streamed,
    )
    return (
        f"{len(calls)} parallel calls {names} with distinct ids, the same joined from the stream "
        "by index"
        f" 0..{len(calls) - 1}"
    )
