"""``POST /v1/completions`` (legacy text completions, with echo and logprobs) and vLLM's
``/tokenize`` and ``/detokenize``: one token per character, its code point."""

from __future__ import annotations

import time
from typing import Any

from .common import (
    CONTEXT_LENGTH,
    MARKERS,
    MODEL,
    ErrorReply,
    Event,
    FakeState,
    choice_texts,
    encodable,
    forced_text,
    forced_texts,
    prompt_text,
    validate,
)


def answer(state: FakeState, body: dict) -> dict | list[Event]:
    params = validate(state, body)
    prompts = _prompts(body)
    logprobs = body.get("logprobs")
    counted = isinstance(logprobs, int) and not isinstance(logprobs, bool)
    if logprobs is not None and not (counted and 0 <= logprobs <= 5):
        raise ErrorReply("logprobs must be an integer between 0 and 5", param="logprobs")
    cid, created = state.next_id("cmpl"), int(time.time())
    choices, completion_tokens = [], 0
    for p_index, p in enumerate(prompts):
        texts = choice_texts(p, params, body.get("stop"))
        if (forced := forced_text(body)) is not None:
            texts = forced_texts(forced, params)
        for j, (text, reason) in enumerate(texts):
            shown = (p + text) if body.get("echo") else text
            completion_tokens += len(text)
            lp = None if logprobs is None else _logprobs(shown, echo=bool(body.get("echo")))
            index = p_index * params["n"] + j
            choices.append({"index": index, "text": shown, "logprobs": lp, "finish_reason": reason})
    prompt_tokens = sum(len(p) for p in prompts)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    base = {"id": cid, "object": "text_completion", "created": created, "model": MODEL}
    if not body.get("stream"):
        return {**base, "choices": choices, "usage": usage}
    return _chunks(body, base, choices, usage)


def _prompts(body: dict) -> list[str]:
    prompt = body.get("prompt")
    prompts = [prompt] if isinstance(prompt, str) else prompt
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
        raise ErrorReply("prompt must be a string or a list of strings", param="prompt")
    if any(len(encodable(p)) > CONTEXT_LENGTH for p in prompts):
        raise ErrorReply(f"prompt exceeds the context length {CONTEXT_LENGTH}", param="prompt")
    return prompts


def _logprobs(shown: str, echo: bool) -> dict:
    """A choice's logprobs, one token per character; an echoed prompt's first token has none."""
    offsets, pos = [], 0
    for ch in shown:
        offsets.append(pos)
        pos += len(ch)
    return {
        "tokens": list(shown),
        "token_logprobs": [None if echo and i == 0 else -0.05 for i in range(len(shown))],
        "top_logprobs": [None if echo and i == 0 else {ch: -0.05} for i, ch in enumerate(shown)],
        "text_offset": offsets,
    }


def _chunks(body: dict, base: dict, choices: list[dict], usage: dict) -> list[Event]:
    """Each choice a character at a time, then its finish reason; the usage if asked; [DONE]."""
    events: list[Event] = []
    for c in choices:
        for ch in c["text"]:
            piece = {"index": c["index"], "text": ch, "logprobs": None, "finish_reason": None}
            events.append({**base, "choices": [piece]})
        end = {
            "index": c["index"],
            "text": "",
            "logprobs": None,
            "finish_reason": c["finish_reason"],
        }
        events.append({**base, "choices": [end]})
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append({**base, "choices": [], "usage": usage})
    events.append("[DONE]")
    return events


def tokenize(state: FakeState, body: dict) -> dict:
    """One token per character, its code point, as the prompt_tokens of a chat count them; each
    parser marker is one token past the code points."""
    text = prompt_text(body) if "messages" in body else body.get("prompt")
    if not isinstance(text, str):
        raise ErrorReply("prompt must be a string, or messages given", param="prompt")
    tokens, rest = [], text
    while rest:
        marker = next((m for m in MARKERS if rest.startswith(m)), None)
        tokens.append(0x110000 + MARKERS.index(marker) if marker else ord(rest[0]))
        rest = rest[len(marker or rest[0]) :]
    return {"count": len(tokens), "max_model_len": CONTEXT_LENGTH, "tokens": tokens}


def _is_token_id(token: Any) -> bool:
    return isinstance(token, int) and 0 <= token < 0x110000


def detokenize(state: FakeState, body: dict) -> dict:
    tokens = body.get("tokens")
    if not isinstance(tokens, list) or not all(map(_is_token_id, tokens)):
        raise ErrorReply("tokens must be a list of token ids", param="tokens")
    return {"prompt": "".join(map(chr, tokens))}
