"""``POST /v1/chat/completions``: chat answers, streamed or not, with tool calls, reasoning and
scripted output parsed as vLLM's parsers do."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from .common import (
    CONTEXT_LENGTH,
    MODEL,
    ErrorReply,
    Event,
    FakeState,
    choice_texts,
    forced_text,
    forced_texts,
    logprob_entry,
    parse_reasoning,
    parse_tool_calls,
    prompt_text,
    validate,
)

RESPONSE_FORMATS = ("text", "json_object", "json_schema")


@dataclass
class Reply:
    """What the model wrote: each choice's (text, finish reason), the tool calls it made, and its
    reasoning; ``scripted`` when the text was forced (then content beside tool calls is kept)."""

    texts: list[tuple[str, str]]
    tool_calls: list[dict] | None
    reasoning: str | None = None
    scripted: bool = False


def answer(state: FakeState, body: dict) -> dict | list[Event]:
    params = validate(state, body)
    prompt = prompt_text(body)
    if len(prompt) > CONTEXT_LENGTH:
        raise ErrorReply(
            f"prompt of {len(prompt)} tokens exceeds the context length {CONTEXT_LENGTH}",
            param="messages",
        )
    json_format = _json_format(body)
    texts = choice_texts(prompt, params, body.get("stop"))
    if json_format:
        texts = [(json.dumps({"answer": t[:8]}), "stop") for t, _ in texts]
    reply = Reply(texts, _tool_calls(state, body))
    if (forced := forced_text(body)) is not None:
        reply = _scripted(state, body, forced_texts(forced, params), reply.tool_calls)
    cid, created = state.next_id("chatcmpl"), int(time.time())
    if not body.get("stream"):
        return _completion(state, body, prompt, reply, _head("chat.completion", cid, created))
    return _chunks(body, prompt, reply, _head("chat.completion.chunk", cid, created))


def _head(kind: str, cid: str, created: int) -> dict:
    """What every answer and chunk starts with."""
    return {
        "id": cid,
        "object": kind,
        "created": created,
        "model": MODEL,
        "system_fingerprint": "fp_fake",
    }


def _json_format(body: dict) -> bool:
    """Whether ``response_format`` asks for JSON; a malformed one is refused."""
    rf = body.get("response_format") or {}
    known = isinstance(rf, dict) and rf.get("type") in RESPONSE_FORMATS
    if body.get("response_format") is not None and not known:
        raise ErrorReply(
            "response_format must be an object with type text, json_object or json_schema",
            param="response_format",
        )
    if rf.get("type") == "json_schema" and not isinstance(_schema(rf), dict):
        raise ErrorReply("response_format.json_schema.schema is required", param="response_format")
    return rf.get("type") in ("json_object", "json_schema")


def _schema(response_format: dict) -> Any:
    return (response_format.get("json_schema") or {}).get("schema")


def _scripted(
    state: FakeState,
    body: dict,
    texts: list[tuple[str, str]],
    tool_calls: list[dict] | None,
) -> Reply:
    """A forced text split as the reasoning parser, then the tool parser (under tool_choice
    'auto', on a text that was not cut) split it; other tool choices keep their ``tool_calls``."""
    reasoning, content = parse_reasoning(texts[0][0])
    if body.get("tools") and body.get("tool_choice", "auto") == "auto" and texts[0][1] == "stop":
        content, calls = parse_tool_calls(content)
        tool_calls = [_call(state, name, arguments) for name, arguments in calls] or None
    return Reply([(content, reason) for _, reason in texts], tool_calls, reasoning, scripted=True)


def _call(state: FakeState, name: Any, arguments: str) -> dict:
    """A call of the tool ``name`` (as the request spelled it), with its own id."""
    return {
        "id": state.next_id("call"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _tool_calls(state: FakeState, body: dict) -> list[dict] | None:
    """The calls a ``tool_choice`` demands: none under 'auto' (a fake model never volunteers
    one), the named tool, the first tool under 'required', or every tool when parallel."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice", "auto" if tools else "none")
    if not tools or choice in ("none", "auto"):
        return None
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if name not in [t.get("function", {}).get("name") for t in tools]:
            raise ErrorReply(f"tool_choice names unknown tool {name!r}", param="tool_choice")
    elif body.get("parallel_tool_calls") and choice == "required":
        names = [t["function"]["name"] for t in tools]
        return [_call(state, name, json.dumps({"x": i})) for i, name in enumerate(names)]
    else:
        name = tools[0]["function"]["name"]
    return [_call(state, name, json.dumps({"x": 1}))]


def _logprobs(text: str, k: int) -> dict:
    return {"content": [logprob_entry(c, k) for c in text]}


def _usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _message(reply: Reply, text: str, reason: str) -> tuple[dict, str]:
    """One choice's message and finish reason."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reply.tool_calls is not None:
        content = (text or None) if reply.scripted else None
        message = {"role": "assistant", "content": content, "tool_calls": reply.tool_calls}
        reason = "tool_calls"
    if reply.reasoning is not None:
        message["reasoning"] = reply.reasoning
    return message, reason


def _completion(state: FakeState, body: dict, prompt: str, reply: Reply, head: dict) -> dict:
    k = body.get("top_logprobs") or 0
    choices = []
    for i, (text, reason) in enumerate(reply.texts):
        message, reason = _message(reply, text, reason)
        logprobs = _logprobs(text, k) if body.get("logprobs") else None
        choice = {"index": i, "message": message, "logprobs": logprobs, "finish_reason": reason}
        choices.append(choice)
    usage = _usage(len(prompt), sum(len(t) for t, _ in reply.texts))
    usage["prompt_tokens_details"] = {"cached_tokens": state.cached_tokens(prompt)}
    return {**head, "choices": choices, "usage": usage}


def _chunks(body: dict, prompt: str, reply: Reply, head: dict) -> list[Event]:
    """The streamed answer: each choice's chunks, then the usage chunk if asked, then [DONE]."""
    events: list[Event] = []
    for i, (text, reason) in enumerate(reply.texts):
        events += _choice_chunks(body, reply, i, text, reason)
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = _usage(len(prompt), sum(len(t) for t, _ in reply.texts))
        events.append({"choices": [], "usage": usage})
    return [{**head, **event} for event in events] + ["[DONE]"]


def _delta(i: int, delta: dict, logprobs: dict | None = None, finish: str | None = None) -> dict:
    choice = {"index": i, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
    return {"choices": [choice]}


def _choice_chunks(body: dict, reply: Reply, i: int, text: str, reason: str) -> list[dict]:
    """Choice ``i``: its role, its reasoning in two halves, its content a character at a time or
    its tool calls, and its finish reason."""
    chunks = [_delta(i, {"role": "assistant", "content": ""})]
    chunks += [_delta(i, {"reasoning": piece}) for piece in _halves(reply.reasoning or "")]
    if reply.tool_calls is not None:
        chunks += [_delta(i, {"content": ch}) for ch in (text if reply.scripted else "")]
        for j, call in enumerate(reply.tool_calls):
            chunks += _call_chunks(i, j, call)
        reason = "tool_calls"
    else:
        k = body.get("top_logprobs") or 0
        for ch in text:
            logprobs = _logprobs(ch, k) if body.get("logprobs") else None
            chunks.append(_delta(i, {"content": ch}, logprobs))
    return [*chunks, _delta(i, {}, finish=reason)]


def _halves(text: str) -> tuple[str, ...]:
    """A text in the two pieces a stream sends it in; an empty one in none."""
    return (text[: len(text) // 2], text[len(text) // 2 :]) if text else ()


def _call_chunks(i: int, j: int, call: dict) -> list[dict]:
    """Tool call ``j`` of choice ``i``: its id and name, then its arguments in two halves."""
    args, name = call["function"]["arguments"], call["function"]["name"]
    head = {"index": j, "id": call["id"], "type": "function"}
    deltas = [{**head, "function": {"name": name, "arguments": ""}}]
    deltas += [{"index": j, "function": {"arguments": piece}} for piece in _halves(args)]
    choices = [{"index": i, "delta": {"tool_calls": [d]}, "finish_reason": None} for d in deltas]
    return [{"choices": [choice]} for choice in choices]
