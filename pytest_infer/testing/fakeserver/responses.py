"""The Responses API: ``POST /v1/responses`` (stored, chained by ``previous_response_id``, in the
background or not), ``GET /v1/responses/{id}`` and ``POST /v1/responses/{id}/cancel``."""

from __future__ import annotations

import json
import time
from typing import Any

from .common import (
    MODEL,
    RESPONSES,
    ErrorReply,
    Event,
    FakeState,
    choice_texts,
    error_body,
    prompt_text,
    validate,
)


def answer(state: FakeState, body: dict) -> dict | list[Event]:
    limit = body.get("max_output_tokens")
    params = validate(state, {**body, "max_output_tokens": None, "max_tokens": limit})
    prompt = _prompt(state, body)
    if body.get("background") and body.get("store") is False:
        raise ErrorReply("background mode needs store: true", param="background")
    fmt = (body.get("text") or {}).get("format") or {}
    ((text, reason),) = choice_texts(prompt, {**params, "n": 1}, None)
    if fmt.get("type") in ("json_object", "json_schema"):
        text, reason = json.dumps({"ok": True}), "stop"
    response = _response(state, body, prompt, text, reason)
    if body.get("store", True):
        state.responses[response["id"]] = {**response, "_prompt": prompt}
    if not body.get("stream"):
        return response
    return _events(response)


def _prompt(state: FakeState, body: dict) -> str:
    """The input as text, after the prompt and answer of the response it continues."""
    text_input = body.get("input")
    prompt = text_input if isinstance(text_input, str) else prompt_text({"messages": text_input})
    previous = body.get("previous_response_id")
    if previous is None:
        return prompt
    earlier = state.responses.get(previous)
    if earlier is None:
        message = f"Response with id {previous!r} not found."
        raise ErrorReply(message, param="previous_response_id", status=404)
    return earlier["_prompt"] + _text(earlier) + prompt


def _text(response: dict) -> str:
    return "".join(part["text"] for item in response["output"] for part in item["content"])


def _response(state: FakeState, body: dict, prompt: str, text: str, reason: str) -> dict:
    rid, mid = state.next_id("resp"), state.next_id("msg")
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }
    background = bool(body.get("background"))
    status = "queued" if background else "incomplete" if reason == "length" else "completed"
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    response: dict[str, Any] = {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "model": MODEL,
        "status": status,
        "incomplete_details": incomplete,
        "output": [item],
        "previous_response_id": body.get("previous_response_id"),
        "background": background,
        "max_output_tokens": body.get("max_output_tokens"),
        "usage": {
            "input_tokens": len(prompt),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": len(text),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": len(prompt) + len(text),
        },
    }
    return response


def _events(response: dict) -> list[Event]:
    """The stream of typed events, each with its sequence number."""
    (item,) = response["output"]
    (part,) = item["content"]
    mid, text = item["id"], part["text"]

    def opening() -> dict:
        return {
            **response,
            "status": "in_progress",
            "output": [],
            "usage": None,
            "incomplete_details": None,
        }

    at = {"output_index": 0, "item_id": mid, "content_index": 0}
    events: list[Event] = [
        {"type": "response.created", "response": opening()},
        {"type": "response.in_progress", "response": opening()},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            **at,
            "part": {"type": "output_text", "text": ""},
        },
    ]
    events += [{"type": "response.output_text.delta", **at, "delta": ch} for ch in text]
    events += [
        {"type": "response.output_text.done", **at, "text": text},
        {"type": "response.content_part.done", **at, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": f"response.{response['status']}", "response": response},
    ]
    return [{**e, "sequence_number": i} for i, e in enumerate(events)]


def stored(state: FakeState, path: str) -> tuple[int, dict]:
    """``GET /v1/responses/{id}``: the stored response as the API shows it."""
    found = state.responses.get(path.removeprefix(RESPONSES + "/"))
    if found is None:
        message = f"Response with id {path.rsplit('/', 1)[-1]!r} not found."
        return 404, error_body(message, param="response_id")
    return 200, public(found)


def cancel(state: FakeState, path: str) -> dict:
    """``POST /v1/responses/{id}/cancel``: a background response cancelled."""
    rid = path.removeprefix(RESPONSES + "/").removesuffix("/cancel")
    found = state.responses.get(rid)
    if found is None:
        raise ErrorReply(f"Response with id {rid!r} not found.", param="response_id", status=404)
    if not found["background"]:
        raise ErrorReply("Cannot cancel a synchronous response.", param="response_id")
    found["status"] = "cancelled"
    return public(found)


def public(stored: dict) -> dict:
    """A stored response as the API shows it: without the prompt kept to continue a chain."""
    return {k: v for k, v in stored.items() if k != "_prompt"}
