"""Anthropic's Messages API: ``POST /v1/messages`` and ``/v1/messages/count_tokens``, with
Anthropic's own request rules and error shape."""

from __future__ import annotations

from .common import (
    MODEL,
    ErrorReply,
    Event,
    FakeState,
    check_range,
    choice,
    prompt_text,
    validate,
)


def error(exc: ErrorReply) -> dict:
    """An error in the Anthropic shape."""
    return {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}


def _check(body: dict) -> None:
    """Anthropic's request rules: model, max_tokens and messages required; temperature and top_p
    from 0 to 1, top_k from 0; no role in messages but user and assistant (and system, which
    newer references admit)."""
    for name in ("model", "max_tokens", "messages"):
        if body.get(name) is None:
            raise ErrorReply(f"{name}: Field required", param=name)
    if not isinstance(body["max_tokens"], int):
        raise ErrorReply("max_tokens: Input should be a valid integer", param="max_tokens")
    check_range(body, "temperature", 0, 1)
    top_k = body.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
        raise ErrorReply(f"top_k must be an integer >= 0, got {top_k!r}", param="top_k")
    listed = body["messages"] if isinstance(body["messages"], list) else []
    roles = [m.get("role") if isinstance(m, dict) else None for m in listed]
    if any(role not in ("user", "assistant", "system") for role in roles):
        raise ErrorReply("messages: each role must be 'user' or 'assistant'", param="messages")


def answer(state: FakeState, body: dict) -> dict | list[Event]:
    """Anthropic's rules first, then the OpenAI ones the fake shares."""
    _check(body)
    shared = {k: v for k, v in body.items() if k not in ("stop_sequences", "top_k")}
    params = validate(state, shared)
    prompt = prompt_text(body)
    text, reason, stop = choice(prompt, {**params, "n": 1}, body.get("stop_sequences"), 0)
    message = {
        "id": state.next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "stop_sequence" if reason == "stop" else "max_tokens",
        "stop_sequence": stop,
        "usage": {"input_tokens": len(prompt), "output_tokens": len(text)},
    }
    if not body.get("stream"):
        return message
    return _events(message, len(prompt))


def _events(message: dict, prompt_tokens: int) -> list[Event]:
    """The stream of typed events: the message's start, its one text block a character at a
    time, and its end."""
    text = message["content"][0]["text"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": 0},
    }
    events: list[Event] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
    ]
    deltas = [{"type": "text_delta", "text": ch} for ch in text]
    events += [{"type": "content_block_delta", "index": 0, "delta": delta} for delta in deltas]
    stopped = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": stopped, "usage": {"output_tokens": len(text)}},
        {"type": "message_stop"},
    ]
    return events


def count_tokens(state: FakeState, body: dict) -> dict:
    return {"input_tokens": len(prompt_text(body))}
