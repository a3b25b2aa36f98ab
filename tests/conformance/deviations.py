"""The fake server made complete (embeddings, context length, a model that calls tools), and the
builders that make it wrong on purpose.

``BASE`` turns the spec-correct fake server into one that passes every check; ``on_response``,
``on_events``, ``answer_when`` and ``chain`` build the deviations each check's proof names
(``proofs/<area>.py``). What one area alone uses lives in its proof module, not here.
"""

from __future__ import annotations

import base64
import copy
import json
import struct
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation, FakeServer

CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


def _vector(text: str, dims: int) -> list[float]:
    return [(zlib.crc32(f"{text}#{i}".encode()) % 1000) / 1000.0 - 0.5 for i in range(dims)]


def embeddings(
    body: dict, *, float64: bool = False, ignore_dimensions: bool = False, no_index: bool = False
) -> dict:
    inputs = body["input"] if isinstance(body.get("input"), list) else [body.get("input", "")]
    dims = 16 if ignore_dimensions or not body.get("dimensions") else body["dimensions"]
    data = []
    for i, text in enumerate(inputs):
        vec: Any = _vector(str(text), dims)
        if body.get("encoding_format", "float") == "base64":
            vec = base64.b64encode(
                struct.pack(f"<{len(vec)}{'d' if float64 else 'f'}", *vec)
            ).decode()
        item = {"object": "embedding", "embedding": vec, "index": i}
        if no_index:
            del item["index"]
        data.append(item)
    return {
        "object": "list",
        "data": data,
        "model": MODEL,
        "usage": {"prompt_tokens": 4, "total_tokens": 4},
    }


def base_request(path: str, body: dict):
    if path == "/v1/models":
        card = {
            "id": MODEL,
            "object": "model",
            "created": 1_700_000_000,
            "owned_by": "fakeserver",
            "max_model_len": CONTEXT_LENGTH,
        }
        return 200, {"object": "list", "data": [card]}
    if path == "/v1/embeddings":
        return 200, embeddings(body)
    return None


def base_response(path: str, body: dict, response: dict) -> dict:
    """A 'capable model': with tools and tool_choice auto (or none given), it calls the first tool."""
    if path == CHAT and body.get("tools") and body.get("tool_choice", "auto") == "auto":
        name = body["tools"][0]["function"]["name"]
        for choice in response["choices"]:
            choice["message"] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_auto",
                        "type": "function",
                        "function": {"name": name, "arguments": '{"city": "Paris"}'},
                    }
                ],
            }
            choice["finish_reason"] = "tool_calls"
    return response


BASE = Deviation(request=base_request, response=base_response)


def compose(mutation: Deviation) -> Deviation:
    """The base, with ``mutation``'s hooks taking precedence (responses pass through both)."""

    def request(path: str, body: dict):
        if mutation.request is not None and (answer := mutation.request(path, body)) is not None:
            return answer
        return base_request(path, body)

    def response(path: str, body: dict, resp: dict) -> dict:
        resp = base_response(path, body, resp)
        return mutation.response(path, body, resp) if mutation.response else resp

    return Deviation(
        request=request,
        response=response,
        events=mutation.events,
        raw_stream=mutation.raw_stream,
        malformed=mutation.malformed,
        error=mutation.error,
    )


# --- small builders -----------------------------------------------------------
def on_response(change: Callable[[str, dict, dict], None], path: str = CHAT) -> Deviation:
    def response(p: str, body: dict, resp: dict) -> dict:
        if p == path:
            resp = copy.deepcopy(resp)
            change(p, body, resp)
        return resp

    return Deviation(response=response)


def on_events(change: Callable[[dict, list], list], path: str = CHAT) -> Deviation:
    return Deviation(
        events=lambda p, body, events: change(body, list(events)) if p == path else events
    )


def answer_when(predicate: Callable[[str, dict], bool], status: int, reply: Any) -> Deviation:
    return Deviation(request=lambda p, body: (status, reply) if predicate(p, body) else None)


def chain(*deviations: Deviation) -> Deviation:
    """Answers and events passed through each deviation's hooks in turn."""

    def response(p: str, body: dict, resp: dict) -> dict:
        for d in deviations:
            resp = d.response(p, body, resp) if d.response else resp
        return resp

    def events_(p: str, body: dict, events: list) -> list:
        for d in deviations:
            events = d.events(p, body, events) if d.events else events
        return events

    return Deviation(response=response, events=events_)


def canned_chat(content: str = "ok") -> dict:
    return {
        "id": "chatcmpl-canned",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


def bad_temperature(p: str, body: dict) -> bool:
    return (
        p == CHAT and isinstance(body.get("temperature"), (int, float)) and body["temperature"] > 2
    )


def content_events(events: list) -> list[int]:
    return [
        i
        for i, e in enumerate(events)
        if isinstance(e, dict)
        and e.get("choices")
        and (e["choices"][0].get("delta") or {}).get("content")
    ]


# --- changes several areas' proofs share ----------------------------------------
def _set(resp: dict, **changes: Any) -> None:
    resp.update(changes)


def _choice(resp: dict) -> dict:
    return resp["choices"][0]


def _finish_twice(body: dict, events: list) -> list:
    idx = content_events(events)
    events[idx[0]] = copy.deepcopy(events[idx[0]])
    events[idx[0]]["choices"][0]["finish_reason"] = "stop"
    return events


def _tool_fragment_without_id(body: dict, events: list) -> list:
    out = []
    for e in events:
        if (
            isinstance(e, dict)
            and e.get("choices")
            and (e["choices"][0].get("delta") or {}).get("tool_calls")
        ):
            e = copy.deepcopy(e)
            for frag in e["choices"][0]["delta"]["tool_calls"]:
                frag.pop("id", None)
        out.append(e)
    return out


def sdk_breaking_error(body: dict, events: list) -> list:
    idx = content_events(events)
    return events[: idx[0] + 1] + [
        {
            "error": {
                "message": "engine overloaded",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
        "[DONE]",
    ]


def _samples_nothing(p: str, body: dict) -> None:
    """transformers serve 5.24.0: every answer is the greedy one, whatever the temperature and seed."""
    if p == CHAT:
        body["temperature"] = 0


SAMPLES_NOTHING = Deviation(request=_samples_nothing)


def _embeddings(**kwargs: Any) -> Deviation:
    return Deviation(
        request=lambda p, body: (200, embeddings(body, **kwargs)) if p == "/v1/embeddings" else None
    )


def _no_finish(body: dict, events: list) -> list:
    out = copy.deepcopy(events)
    for e in out:
        for choice in (e.get("choices") or []) if isinstance(e, dict) else []:
            choice["finish_reason"] = None
    return out


# --- the Responses and Anthropic Messages dialects ---------------------------------
RESPONSES, MESSAGES = "/v1/responses", "/v1/messages"


def _message_item(r: dict) -> dict:
    return r["output"][0]


def _renumbered(events: list) -> list:
    return [{**e, "sequence_number": i} if isinstance(e, dict) else e for i, e in enumerate(events)]


def _typed(kind: str) -> Callable[[Any], bool]:
    return lambda e: isinstance(e, dict) and e.get("type") == kind


def _without(kind: str, *, first_only: bool = False) -> Callable[[dict, list], list]:
    def change(body: dict, events: list) -> list:
        drop = [i for i, e in enumerate(events) if _typed(kind)(e)][: 1 if first_only else None]
        return _renumbered([e for i, e in enumerate(events) if i not in drop])

    return change


def _misnamed_event(body: dict, events: list) -> list:
    event = events[2]
    return events[:2] + [f"event: wrong\ndata: {json.dumps(event)}\n\n".encode()] + events[3:]


# --- streamed tool-call fragments -------------------------------------------------
def _fragments(events: list) -> list[dict]:
    return [
        f
        for e in events
        if isinstance(e, dict) and e.get("choices")
        for f in (e["choices"][0].get("delta") or {}).get("tool_calls") or []
    ]


def _first_arguments_cut(body: dict, events: list) -> list:
    """The second half of call 0's arguments never sent: its fragments join into '{"x'."""
    last = max(
        i
        for i, e in enumerate(events)
        if any(
            f.get("index") == 0 and (f.get("function") or {}).get("arguments")
            for f in _fragments([e])
        )
    )
    return events[:last] + events[last + 1 :]


# --- the checks of the model an answer names --------------------------------------
MODEL_CHECKS = ("chat.model", "completions.model", "responses.model", "messages.model")


@contextmanager
def answers() -> Iterator[None]:
    """A skip raised inside fails the test: an outcome pytest reports as a skip (unsupported, inconclusive)
    would otherwise pass for a helper that gives up on a server that answers."""
    try:
        yield
    except pytest.skip.Exception as exc:
        pytest.fail(f"the helper skipped instead of answering: {exc.msg}")


def tool_streams_cut(body: dict, events: list) -> list:
    """Every streamed tool call ends at max_tokens, its fragments sent: the model's bad luck, not the server's fault."""
    events = copy.deepcopy(events)
    for e in events:
        if (
            body.get("tools")
            and isinstance(e, dict)
            and e.get("choices")
            and e["choices"][0].get("finish_reason")
        ):
            e["choices"][0]["finish_reason"] = "length"
    return events


def posted(fake: FakeServer, path: str) -> list[Any]:
    """The bodies POSTed to ``path``, in order."""
    return [body for method, p, body in fake.requests if method == "POST" and p == path]
