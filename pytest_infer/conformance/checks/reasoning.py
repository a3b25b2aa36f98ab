"""Reasoning as clients read it: the field's name and place, the same in an answer and in its
stream.
"""

from __future__ import annotations

from typing import Any

from ...outcomes import NotExercised
from ..context import CheckContext
from ..registry import check
from .parsers import scripted_reasoning_fields

REFERENCE = (
    "vLLM reasoning outputs (message.reasoning, formerly reasoning_content); DeepSeek API "
    "reasoning_content"
)
# vLLM renamed reasoning_content to reasoning; clients read one of them
NAMES = ("reasoning", "reasoning_content")
THINK_TAGS = ("<think>", "</think>")


def _named(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: fields[k] for k in NAMES if fields.get(k)}


@check(
    "chat.reasoning",
    "reasoning comes under one name, outside content, the same in the answer and in its stream",
    reference=REFERENCE,
)
def reasoning(ctx: CheckContext) -> str:
    """A client reads one field; a stream that names it otherwise than the answer, or thinking left
    in content, breaks it."""
    scripted = scripted_reasoning_fields(ctx)
    ex = ctx.chat(**{"max_tokens": 64, "temperature": 0, **scripted})
    message = (
        ((ctx.expect_json_object(ex, "a chat completion").get("choices") or [{}])[0]).get("message")
        or {}
    )
    stream = ctx.chat_stream(**{"max_tokens": 64, "temperature": 0, **scripted})
    deltas = [
        ch.get("delta") or {}
        for c in ctx.expect_stream(stream, "a streamed chat")
        for ch in c.get("choices") or []
    ]
    answered = _named(message)
    streamed: dict[str, str] = {}
    for delta in deltas:
        for name, piece in _named(delta).items():
            streamed[name] = streamed.get(name, "") + str(piece)
    if not answered and not streamed:
        raise NotExercised(
            "no reasoning in the answer or its stream (no reasoning parser, or a model that does "
            "not reason)"
        )
    ctx.expect(
        len(answered) == 1 and all(isinstance(v, str) for v in answered.values()),
        f"one string reasoning field ({' or '.join(NAMES)}) in the message",
        answered,
        ex,
    )
    ctx.expect(
        set(streamed) == set(answered),
        f"the stream's reasoning under the message's name {sorted(answered)}",
        sorted(streamed),
        stream,
    )
    ctx.expect(
        streamed == answered, "the streamed reasoning to join into the message's", streamed, stream
    )
    content = str(message.get("content") or "")
    ctx.expect(
        not any(tag in content for tag in THINK_TAGS),
        "content without <think> tags: the reasoning parsed out of it",
        content,
        ex,
    )
    ((name, text),) = answered.items()
    return (
        f"reasoning under {name!r} ({len(text)} chars), the same joined from the stream; "
        "content without <think> tags"
    )
