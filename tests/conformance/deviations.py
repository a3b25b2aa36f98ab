"""The fake server made complete (embeddings, context length, a model that calls tools) and wrong on purpose.

``BASE`` turns the spec-correct fake server into one that passes every check;
``MUTATIONS`` maps each check id to the one deviation that check exists for.
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

from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation, FakeServer, error_body, wrong_model

CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


def _vector(text: str, dims: int) -> list[float]:
    return [(zlib.crc32(f"{text}#{i}".encode()) % 1000) / 1000.0 - 0.5 for i in range(dims)]


def embeddings(body: dict, *, float64: bool = False, ignore_dimensions: bool = False, no_index: bool = False) -> dict:
    inputs = body["input"] if isinstance(body.get("input"), list) else [body.get("input", "")]
    dims = 16 if ignore_dimensions or not body.get("dimensions") else body["dimensions"]
    data = []
    for i, text in enumerate(inputs):
        vec: Any = _vector(str(text), dims)
        if body.get("encoding_format", "float") == "base64":
            vec = base64.b64encode(struct.pack(f"<{len(vec)}{'d' if float64 else 'f'}", *vec)).decode()
        item = {"object": "embedding", "embedding": vec, "index": i}
        if no_index:
            del item["index"]
        data.append(item)
    return {"object": "list", "data": data, "model": MODEL, "usage": {"prompt_tokens": 4, "total_tokens": 4}}


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
    return Deviation(events=lambda p, body, events: change(body, list(events)) if p == path else events)


def answer_when(predicate: Callable[[str, dict], bool], status: int, reply: Any) -> Deviation:
    return Deviation(request=lambda p, body: (status, reply) if predicate(p, body) else None)


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
    return p == CHAT and isinstance(body.get("temperature"), (int, float)) and body["temperature"] > 2


def no_messages(p: str, body: dict) -> bool:
    return p == CHAT and "messages" not in body


def empty_messages(p: str, body: dict) -> bool:
    return p == CHAT and body.get("messages") == []


def long_prompt(p: str, body: dict) -> bool:
    return (
        p == CHAT
        and sum(len(str(m.get("content") or "")) for m in body.get("messages") or [] if isinstance(m, dict))
        > CONTEXT_LENGTH
    )


def content_events(events: list) -> list[int]:
    return [
        i
        for i, e in enumerate(events)
        if isinstance(e, dict) and e.get("choices") and (e["choices"][0].get("delta") or {}).get("content")
    ]


# --- one deviation per check ---------------------------------------------------------
def _set(resp: dict, **changes: Any) -> None:
    resp.update(changes)


def _choice(resp: dict) -> dict:
    return resp["choices"][0]


def _cumulative(body: dict, events: list) -> list:
    """TRT-LLM#3280: each chunk carries the whole text so far."""
    text = ""
    for i in content_events(events):
        text += events[i]["choices"][0]["delta"]["content"]
        events[i] = copy.deepcopy(events[i])
        events[i]["choices"][0]["delta"]["content"] = text
    return events


def _completion_cumulative(body: dict, events: list) -> list:
    text = ""
    for i, e in enumerate(events):
        if isinstance(e, dict) and e.get("choices") and e["choices"][0].get("text"):
            text += e["choices"][0]["text"]
            events[i] = copy.deepcopy(e)
            events[i]["choices"][0]["text"] = text
    return events


def _stop_leak(body: dict, events: list) -> list:
    if not body.get("stop"):
        return events
    idx = content_events(events)
    stop = body["stop"][0] if isinstance(body["stop"], list) else body["stop"]
    leak = copy.deepcopy(events[idx[-1]] if idx else events[0])
    leak["choices"][0]["delta"] = {"content": stop}
    events.insert((idx[-1] + 1) if idx else 1, leak)
    return events


def _bytes_decoded_alone(body: dict, events: list) -> list:
    """Each token decoded on its own: a character of 4 byte tokens streams as 4 U+FFFD."""
    for i in content_events(events):
        delta = events[i]["choices"][0]["delta"]
        if any(ord(ch) > 0x7F for ch in delta["content"]):
            events[i] = copy.deepcopy(events[i])
            events[i]["choices"][0]["delta"]["content"] = "".join(
                "\ufffd" * len(ch.encode()) if ord(ch) > 0x7F else ch for ch in delta["content"]
            )
    return events


def _finish_twice(body: dict, events: list) -> list:
    idx = content_events(events)
    events[idx[0]] = copy.deepcopy(events[idx[0]])
    events[idx[0]]["choices"][0]["finish_reason"] = "stop"
    return events


def _usage_always(body: dict, events: list) -> list:
    if (body.get("stream_options") or {}).get("include_usage"):
        return events
    first = events[0]
    usage = {
        **{k: v for k, v in first.items() if k != "choices"},
        "choices": [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return events[:-1] + [usage, events[-1]]


def _usage_everywhere(body: dict, events: list) -> list:
    u = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return [({**e, "usage": u} if isinstance(e, dict) else e) for e in events]


def _tool_fragment_without_id(body: dict, events: list) -> list:
    out = []
    for e in events:
        if isinstance(e, dict) and e.get("choices") and (e["choices"][0].get("delta") or {}).get("tool_calls"):
            e = copy.deepcopy(e)
            for frag in e["choices"][0]["delta"]["tool_calls"]:
                frag.pop("id", None)
        out.append(e)
    return out


def _error_mid_stream(body: dict, events: list) -> list:
    idx = content_events(events)
    at = idx[1] if len(idx) > 1 else 1
    return events[:at] + [{"error": "the engine crashed"}] + events[at:]


def sdk_breaking_error(body: dict, events: list) -> list:
    idx = content_events(events)
    return events[: idx[0] + 1] + [
        {"error": {"message": "engine overloaded", "type": "server_error", "param": None, "code": None}},
        "[DONE]",
    ]


def _prompt_list_first_only(p: str, body: dict, resp: dict) -> None:
    if isinstance(body.get("prompt"), list):
        resp["choices"] = resp["choices"][: body.get("n") or 1]


def _echo_ignored(p: str, body: dict, resp: dict) -> None:
    if body.get("echo"):
        for c in resp["choices"]:
            c["text"] = c["text"][len(body["prompt"]) :]


def _drop_text_offset(p: str, body: dict, resp: dict) -> None:
    for c in resp["choices"]:
        if c.get("logprobs"):
            del c["logprobs"]["text_offset"]


def _positive_logprob(p: str, body: dict, resp: dict) -> None:
    lp = _choice(resp).get("logprobs")
    if lp and lp.get("content"):
        lp["content"][0]["logprob"] = 0.5


def _no_logprobs_without_top(p: str, body: dict, resp: dict) -> None:
    if body.get("logprobs") and body.get("top_logprobs") is None:
        _choice(resp)["logprobs"] = {"content": None}


def _samples_nothing(p: str, body: dict) -> None:
    """transformers serve 5.24.0: every answer is the greedy one, whatever the temperature and seed."""
    if p == CHAT:
        body["temperature"] = 0


SAMPLES_NOTHING = Deviation(request=_samples_nothing)


def _entry_per_character(p: str, body: dict, resp: dict) -> None:
    """llama.cpp b11312: a character of several byte tokens is one logprobs entry, while usage bills every token."""
    if body.get("logprobs"):
        extra = sum(len(ch.encode()) - 1 for ch in _choice(resp)["message"]["content"])
        resp["usage"].update(
            completion_tokens=resp["usage"]["completion_tokens"] + extra,
            total_tokens=resp["usage"]["total_tokens"] + extra,
        )


def _logprobs_when_off(p: str, body: dict, resp: dict) -> None:
    if not body.get("logprobs"):
        _choice(resp)["logprobs"] = {"content": []}


def _json_broken(kind: str) -> Callable[[str, dict, dict], None]:
    def change(p: str, body: dict, resp: dict) -> None:
        if (body.get("response_format") or {}).get("type") == kind:
            _choice(resp)["message"]["content"] = "{not json" if kind == "json_object" else '{"wrong": 1}'

    return change


def _ignore_max_completion_tokens(p: str, body: dict, resp: dict) -> None:
    if body.get("max_completion_tokens") is not None:
        _choice(resp)["message"]["content"] += "xyz"
        resp["usage"]["completion_tokens"] += 3
        resp["usage"]["total_tokens"] += 3


def _stop_in_text(p: str, body: dict, resp: dict) -> None:
    if body.get("stop"):
        _choice(resp)["message"]["content"] += body["stop"][0]


def _seed_ignored(p: str, body: dict, resp: dict) -> None:
    """Each seeded answer differs (by its id), as if the seed were not passed to the sampler."""
    if body.get("seed") is not None and body.get("temperature"):
        _choice(resp)["message"]["content"] += f"#{resp['id']}"


def _limit_says_stop(p: str, body: dict, resp: dict) -> None:
    for c in resp["choices"]:
        if c["finish_reason"] == "length":
            c["finish_reason"] = "stop"


def _empty_required(p: str, body: dict, resp: dict) -> None:
    if body.get("tool_choice") == "required":
        _choice(resp)["message"]["tool_calls"] = []  # vllm#53255


def _wrong_named(p: str, body: dict, resp: dict) -> None:
    if isinstance(body.get("tool_choice"), dict):
        _choice(resp)["message"]["tool_calls"][0]["function"]["name"] = "get_weather"


def _call_despite_none(p: str, body: dict, resp: dict) -> None:
    if body.get("tool_choice") == "none" and body.get("tools"):
        _choice(resp)["message"]["tool_calls"] = [
            {"id": "call_x", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        ]
        _choice(resp)["finish_reason"] = "tool_calls"


def _auto_never_calls(p: str, body: dict, resp: dict) -> None:
    if body.get("tools") and body.get("tool_choice", "auto") == "auto":
        _choice(resp)["message"] = {"role": "assistant", "content": "I cannot."}
        _choice(resp)["finish_reason"] = "stop"


def _rename_choices(p: str, body: dict, resp: dict) -> None:
    resp["results"] = resp.pop("choices")


def _embeddings(**kwargs: Any) -> Deviation:
    return Deviation(request=lambda p, body: (200, embeddings(body, **kwargs)) if p == "/v1/embeddings" else None)


def _models_without_owner(p: str, body: dict):
    if p == "/v1/models":
        return 200, {
            "object": "list",
            "data": [{"id": MODEL, "object": "model", "created": 1_700_000_000, "max_model_len": CONTEXT_LENGTH}],
        }
    return None


FLAT_ERROR = {"error": "messages is required"}
INT_CODE = {"error": {"message": "messages is required", "type": "BadRequestError", "param": "messages", "code": 400}}


def ignoring(name: str) -> Deviation:
    """Takes the request with ``name`` and drops it before answering: accepted with 200, never applied."""
    return Deviation(request=lambda p, body: None if p != CHAT else body.pop(name, None) and None)


MUTATIONS: dict[str, Deviation] = {
    "chat.fields": on_response(lambda p, b, r: _set(r, id="")),
    "chat.n": on_response(lambda p, b, r: _set(r, choices=r["choices"][:1])),
    "chat.finish-reason": on_response(lambda p, b, r: _choice(r).update(finish_reason="eos_token")),
    "chat.max-tokens": on_response(_limit_says_stop),
    "chat.max-completion-tokens": on_response(_ignore_max_completion_tokens),
    "chat.usage": on_response(lambda p, b, r: r["usage"].update(total_tokens=r["usage"]["total_tokens"] + 1)),
    "chat.stop": on_response(_stop_in_text),
    "chat.seed": on_response(_seed_ignored),
    "chat.parameter-ranges": answer_when(bad_temperature, 200, canned_chat()),
    "chat.logprobs": on_response(_positive_logprob),
    "chat.logprobs-without-top": on_response(_no_logprobs_without_top),
    "chat.logprobs-multibyte": on_response(_entry_per_character),
    "chat.logprobs-off": on_response(_logprobs_when_off),
    "chat.json-object": on_response(_json_broken("json_object")),
    "chat.json-schema": on_response(_json_broken("json_schema")),
    "chat.json-schema-missing": answer_when(
        lambda p, b: (b.get("response_format") or {}) == {"type": "json_schema"},
        500,
        {"detail": "Internal Server Error"},
    ),
    "completions.fields": on_response(lambda p, b, r: _set(r, object="completion"), COMPLETIONS),
    "completions.prompt-list-n": on_response(_prompt_list_first_only, COMPLETIONS),
    "completions.echo": on_response(_echo_ignored, COMPLETIONS),
    "completions.logprobs": on_response(_drop_text_offset, COMPLETIONS),
    "completions.stream": on_events(_completion_cumulative, COMPLETIONS),
    "embeddings.fields": _embeddings(no_index=True),
    "embeddings.base64": _embeddings(float64=True),
    "embeddings.dimensions": _embeddings(ignore_dimensions=True),
    "errors.bad-input-4xx": answer_when(
        lambda p, b: p == CHAT and not isinstance(b.get("messages"), list), 500, {"detail": "Internal Server Error"}
    ),
    "errors.bad-input-stream": answer_when(lambda p, b: bad_temperature(p, b) and b.get("stream"), 200, canned_chat()),
    "errors.context-overflow": answer_when(long_prompt, 500, {"detail": "Internal Server Error"}),
    "errors.context-overflow-stream": answer_when(
        lambda p, b: long_prompt(p, b) and b.get("stream"), 200, canned_chat()
    ),
    "errors.envelope": answer_when(no_messages, 400, FLAT_ERROR),
    "errors.envelope-types": answer_when(no_messages, 400, INT_CODE),
    "errors.unknown-model": answer_when(
        lambda p, b: p == CHAT and b.get("model") not in (MODEL, None), 400, error_body("unknown model")
    ),
    "models.list": Deviation(request=_models_without_owner),
    "models.retrieve": answer_when(lambda p, b: p.startswith("/v1/models/"), 404, {"detail": "Not Found"}),
    "sdk.chat": on_response(lambda p, b, r: _rename_choices(p, b, r) if not b.get("stream") else None),
    "sdk.chat-async": on_response(lambda p, b, r: _rename_choices(p, b, r) if not b.get("stream") else None),
    "sdk.chat-stream": on_events(sdk_breaking_error),
    "sdk.chat-stream-async": on_events(sdk_breaking_error),
    "sdk.completions": on_events(
        _sdk_breaking_error_completions := lambda body, events: (
            events[:2]
            + [{"error": {"message": "overloaded", "type": "server_error", "param": None, "code": None}}, "[DONE]"]
        ),
        COMPLETIONS,
    ),
    "sdk.embeddings": _embeddings(float64=True),
    "sdk.errors": answer_when(empty_messages, 500, error_body("internal error", "server_error")),
    "sdk.errors-stream-async": answer_when(lambda p, b: empty_messages(p, b) and b.get("stream"), 200, canned_chat()),
    "sdk.tool-stream": on_events(_tool_fragment_without_id),
    "stream.sse-framing": on_events(lambda body, events: events[:-1]),
    "stream.chunk-identity": on_events(
        lambda body, events: [events[0], {**events[1], "id": "chatcmpl-other"}, *events[2:]]
    ),
    "stream.first-delta-role": on_events(
        lambda body, events: [
            {**events[0], "choices": [{**events[0]["choices"][0], "delta": {"content": ""}}]},
            *events[1:],
        ]
    ),
    "stream.text-equals-nonstream": on_events(_cumulative),
    "stream.one-finish-reason": on_events(_finish_twice),
    "stream.multibyte-text": on_events(_bytes_decoded_alone),
    "stream.stop": on_events(_stop_leak),
    "stream.usage-off": on_events(_usage_always),
    "stream.include-usage": on_events(_usage_everywhere),
    "stream.options-without-stream": answer_when(
        lambda p, b: p == CHAT and b.get("stream_options") is not None and not b.get("stream"), 200, canned_chat()
    ),
    "stream.error-event": on_events(_error_mid_stream),
    "tools.required": on_response(_empty_required),
    "tools.named": on_response(_wrong_named),
    "tools.none": on_response(_call_despite_none),
    "tools.stream-fragments": on_events(_tool_fragment_without_id),
    "tools.result-message": answer_when(
        lambda p, b: (
            p == CHAT and any(isinstance(m, dict) and m.get("role") == "tool" for m in b.get("messages") or [])
        ),
        400,
        error_body("role 'tool' is not supported", param="messages"),
    ),
    "tools.auto": on_response(_auto_never_calls),
    "chat.request-fields": ignoring("frequency_penalty"),
    "tokenize.round-trip": on_response(lambda p, b, r: r.update(prompt="<s>" + r["prompt"]), path="/detokenize"),
    "chat.usage-details": on_response(
        lambda p, b, r: r["usage"]["prompt_tokens_details"].update(cached_tokens=r["usage"]["prompt_tokens"] + 5)
    ),
    "tokenize.chat-count": on_response(
        lambda p, b, r: r.update(count=r["count"] - 5) if "messages" in b else None, path="/tokenize"
    ),
}

# What each mutation's failure message must mention, so a check that fails for the wrong reason is caught.
EXPECTED_IN_MESSAGE: dict[str, str] = {
    "chat.fields": "id is ''",
    "chat.n": "1 choice(s)",
    "chat.finish-reason": "eos_token",
    "chat.max-tokens": "finish_reason is 'stop'",
    "chat.max-completion-tokens": "completion_tokens",
    "chat.usage": "total_tokens",
    "chat.stop": "finish_reason 'stop'",
    "chat.seed": "seed 4242",
    "chat.parameter-ranges": "temperature=2.5 -> HTTP 200",
    "chat.logprobs": "logprob 0.5 > 0",
    "chat.logprobs-without-top": "logprobs.content is None",
    "chat.logprobs-multibyte": "one logprobs entry per generated token",
    "chat.logprobs-off": "logprobs null",
    "chat.json-object": "json.loads",
    "chat.json-schema": "'answer' is a required property",
    "chat.json-schema-missing": "HTTP 500",
    "completions.fields": "object is 'completion'",
    "completions.prompt-list-n": "index 0, 1, 2, 3",
    "completions.echo": "starting with the prompt",
    "completions.logprobs": "list fields",
    "completions.stream": "non-streamed text",
    "embeddings.fields": "index 0 and 1",
    "embeddings.base64": "values",
    "embeddings.dimensions": "vectors of 8 values",
    "errors.bad-input-4xx": "HTTP 500",
    "errors.bad-input-stream": "HTTP 200",
    "errors.context-overflow": "HTTP 500",
    "errors.context-overflow-stream": "HTTP 200",
    "errors.envelope": "the body is not",
    "errors.envelope-types": "error.code is 400",
    "errors.unknown-model": "HTTP 404",
    "models.list": "owned_by",
    "models.retrieve": "HTTP 404",
    "sdk.chat": "the SDK to consume a chat completion",
    "sdk.chat-async": "the SDK to consume a chat completion",
    "sdk.chat-stream": "APIError",
    "sdk.chat-stream-async": "APIError",
    "sdk.completions": "APIError",
    "sdk.embeddings": "floats equal",
    "sdk.errors": "InternalServerError",
    "sdk.errors-stream-async": "BadRequestError when the stream is opened",
    "sdk.tool-stream": "calls with id",
    "stream.sse-framing": "[DONE]",
    "stream.chunk-identity": "one non-empty id",
    "stream.first-delta-role": "role 'assistant'",
    "stream.text-equals-nonstream": "non-streamed text",
    "stream.one-finish-reason": "one non-null finish_reason",
    "stream.multibyte-text": "the non-streamed text",
    "stream.stop": "finish_reason 'stop'",
    "stream.usage-off": "no usage",
    "stream.include-usage": "usage only in the last chunk",
    "stream.options-without-stream": "HTTP 200",
    "stream.error-event": "error event",
    "tools.required": "tool_calls is []",
    "tools.named": "not one of ('get_time',)",
    "tools.none": "no tool_calls",
    "tools.stream-fragments": "has no id",
    "tools.result-message": "HTTP 200 for a conversation with a tool result",
    "tools.auto": "get_weather call",
    "chat.request-fields": '{"frequency_penalty": 2.0} -> HTTP 200, ignored',
    "tokenize.round-trip": "<s>Hello, world!",
    "chat.usage-details": "cached_tokens: a count within prompt_tokens",
    "tokenize.chat-count": "got:      25",
}


def dumps(value: Any) -> str:
    return json.dumps(value)


# --- one deviation per further failure branch -----------------------------------
# MUTATIONS holds each check to one of its conditions; these reach the others. Each entry:
# (branch, deviation, text the failure must quote from what the server sent).
def _accept_chat(predicate: Callable[[dict], bool]) -> Deviation:
    return answer_when(lambda p, b: p == CHAT and predicate(b), 200, canned_chat())


def _bad_input_500(predicate: Callable[[dict], bool]) -> Deviation:
    return answer_when(lambda p, b: p == CHAT and predicate(b), 500, {"detail": "boom"})


def _no_finish(body: dict, events: list) -> list:
    out = copy.deepcopy(events)
    for e in out:
        for choice in (e.get("choices") or []) if isinstance(e, dict) else []:
            choice["finish_reason"] = None
    return out


def _in_usage_chunk(change: Callable[[dict], None]) -> Callable[[dict, list], list]:
    def events_(body: dict, events: list) -> list:
        out = copy.deepcopy(events)
        if (body.get("stream_options") or {}).get("include_usage"):
            change(next(e for e in reversed(out) if isinstance(e, dict)))
        return out

    return events_


_usage_chunk_with_choices = _in_usage_chunk(
    lambda c: c.update(choices=[{"index": 0, "delta": {}, "finish_reason": None}])
)
_usage_that_does_not_add_up = _in_usage_chunk(
    lambda c: c.update(usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 9})
)


def _message(change: Callable[[dict], None]) -> Deviation:
    return on_response(lambda p, b, r: change(_choice(r)["message"]))


BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "chat.fields": [
        ("object", on_response(lambda p, b, r: _set(r, object="chat.completions")), "object is 'chat.completions'"),
        ("created", on_response(lambda p, b, r: _set(r, created="1700000000")), "created is '1700000000'"),
        ("model", on_response(lambda p, b, r: _set(r, model="")), "model is ''"),
        ("choices", on_response(lambda p, b, r: _set(r, choices=[])), "choices is not a non-empty list"),
        ("content", _message(lambda m: m.update(content=7)), "content is not a string"),
        ("role", _message(lambda m: m.update(role="user")), "role is not 'assistant'"),
        ("usage", on_response(lambda p, b, r: r.pop("usage")), "usage is missing"),
    ],
    "chat.stop": [
        (
            "finish_reason",
            on_response(lambda p, b, r: _choice(r).update(finish_reason="length") if b.get("stop") else None),
            '"finish_reason": "length"',
        ),
    ],
    "chat.parameter-ranges": [
        (name, _accept_chat(predicate), f"{name} -> HTTP 200")
        for name, predicate in {
            "temperature=-1": lambda b: b.get("temperature") == -1,
            "top_p=1.5": lambda b: b.get("top_p") == 1.5,
            "n=0": lambda b: b.get("n") == 0,
            "top_logprobs=21": lambda b: b.get("top_logprobs") == 21,
            "seed=2**64": lambda b: b.get("seed") == 2**64,
        }.items()
    ],
    "errors.bad-input-4xx": [
        (name, _bad_input_500(predicate), 'HTTP 500: {"detail": "boom"}')
        for name, predicate in {
            "temperature out of range": lambda b: b.get("temperature") == 5.0,
            "message without role": lambda b: any(
                isinstance(m, dict) and "role" not in m for m in b.get("messages") or []
            ),
            "max_tokens negative": lambda b: b.get("max_tokens") == -1,
        }.items()
    ],
    "stream.one-finish-reason": [
        ("none", on_events(_no_finish), '{"0": 0}'),
    ],
    "stream.include-usage": [
        (
            "choices",
            on_events(_usage_chunk_with_choices),
            '"choices": [{"index": 0, "delta": {}, "finish_reason": null}]',
        ),
        ("sum", on_events(_usage_that_does_not_add_up), '"total_tokens": 9'),
    ],
}


BRANCHES["chat.request-fields"] = [
    (name, ignoring(name), "-> HTTP 200, ignored")
    for name in ("max_completion_tokens", "n", "logprobs", "response_format", "top_p", "presence_penalty")
] + [
    ("temperature-greedy", SAMPLES_NOTHING, '{"temperature": 2.0} -> HTTP 200, ignored'),
    (
        "error",
        answer_when(lambda p, b: p == CHAT and b.get("presence_penalty") == 2.0, 500, {"detail": "boom"}),
        '{"presence_penalty": 2.0} -> HTTP 500, error',
    ),
]

BRANCHES["tokenize.round-trip"] = [
    ("count", on_response(lambda p, b, r: r.update(count=r["count"] + 1), path="/tokenize"), "got:      29"),
    (
        "ids",
        on_response(lambda p, b, r: r.update(tokens=[str(t) for t in r["tokens"]]), path="/tokenize"),
        '["72", "101"',
    ),
]

BRANCHES["chat.usage-details"] = [
    (
        "no-cache-hit",
        on_response(lambda p, b, r: r["usage"]["prompt_tokens_details"].update(cached_tokens=0)),
        "cached_tokens > 0",
    ),
    (
        "not-a-count",
        on_response(lambda p, b, r: r["usage"]["prompt_tokens_details"].update(cached_tokens="12")),
        '"cached_tokens": "12"',
    ),
    (
        "reasoning",
        on_response(lambda p, b, r: r["usage"].update(completion_tokens_details={"reasoning_tokens": 9})),
        '"reasoning_tokens": 9',
    ),
]


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


def _terminal_named(kind: str) -> Callable[[dict, list], list]:
    """vLLM 0.32: ``response.completed`` ends a stream whose response is ``incomplete``."""
    return lambda body, events: events[:-1] + [{**events[-1], "type": kind}]


def _misnamed_event(body: dict, events: list) -> list:
    event = events[2]
    return events[:2] + [f"event: wrong\ndata: {json.dumps(event)}\n\n".encode()] + events[3:]


def _stray_delta(body: dict, events: list) -> list:
    i = next(i for i, e in enumerate(events) if _typed("response.output_text.delta")(e))
    return events[:i] + [{**events[i], "item_id": "msg-bogus"}] + events[i + 1 :]


def _stored_elsewhere(p: str, body: dict):
    if p.startswith(RESPONSES + "/resp-") and not p.endswith("/cancel") and not body:
        return 200, {"id": "resp-other", "object": "response", "status": "completed", "output": []}
    return None


def _usage(**changes: Any) -> Deviation:
    return on_response(lambda p, b, r: r["usage"].update(changes), path=RESPONSES)


def _details(key: str, inner: str, value: Any) -> Deviation:
    return on_response(lambda p, b, r: r["usage"][key].update({inner: value}), path=RESPONSES)


def _stop_fired(p: str, b: dict, r: dict) -> bool:
    return bool(b.get("stop_sequences")) and r.get("stop_reason") == "stop_sequence"


MUTATIONS |= {
    "responses.create": on_response(lambda p, b, r: _set(r, object="responses"), path=RESPONSES),
    "responses.usage": _usage(total_tokens=1),
    "responses.stream-events": on_events(
        lambda b, events: [{**e, "sequence_number": i + 1} for i, e in enumerate(events)], path=RESPONSES
    ),
    "responses.stream-terminal": on_events(_terminal_named("response.completed"), path=RESPONSES),
    "responses.structured": on_response(
        lambda p, b, r: _message_item(r)["content"][0].update(text="Sure! Here it is.") if b.get("text") else None,
        path=RESPONSES,
    ),
    "responses.retrieve": Deviation(request=_stored_elsewhere),
    "responses.chain": Deviation(
        request=lambda p, body: None if p != RESPONSES else body.pop("previous_response_id", None) and None
    ),
    "responses.cancel": answer_when(
        lambda p, b: p.endswith("/cancel") and "does_not_exist" not in p,
        200,
        {"id": "x", "object": "response", "status": "in_progress"},
    ),
    "responses.errors": answer_when(
        lambda p, b: p == RESPONSES and b.get("max_output_tokens") == -1,
        200,
        {"object": "response", "status": "completed"},
    ),
    "messages.create": on_response(lambda p, b, r: r.pop("stop_sequence"), path=MESSAGES),
    "messages.stop-sequence": on_response(
        lambda p, b, r: _set(r, stop_sequence=None) if _stop_fired(p, b, r) else None, path=MESSAGES
    ),
    "messages.stream-events": on_events(_without("message_delta"), path=MESSAGES),
    "messages.count-tokens": on_response(
        lambda p, b, r: _set(r, input_tokens=r["input_tokens"] - 3), path=MESSAGES + "/count_tokens"
    ),
    "messages.errors": answer_when(
        lambda p, b: p == MESSAGES and "max_tokens" not in b,
        400,
        error_body("max_tokens is required", param="max_tokens"),
    ),
}
EXPECTED_IN_MESSAGE |= {
    "responses.create": "object is 'responses'",
    "responses.usage": '"total_tokens": 1',
    "responses.stream-events": "[1, 2, 3",
    "responses.stream-terminal": "got:      response.completed",
    "responses.structured": "Sure! Here it is.",
    "responses.retrieve": '"id": ["resp-',
    "responses.chain": "input_tokens >= ",
    "responses.cancel": "got:      in_progress",
    "responses.errors": "HTTP 200",
    "messages.create": "stop_sequence is 'missing'",
    "messages.stop-sequence": '"stop_sequence": null',
    "messages.stream-events": "content_block_stop -> message_stop",
    "messages.count-tokens": "got:      48",
    "messages.errors": 'the body is not {"type": "error"',
}
BRANCHES |= {
    "responses.create": [
        ("status", on_response(lambda p, b, r: _set(r, status="done"), path=RESPONSES), "status is 'done'"),
        (
            "incomplete-details",
            on_response(lambda p, b, r: _set(r, incomplete_details=None), path=RESPONSES),
            "status 'incomplete' with incomplete_details None",
        ),
        (
            "no-message",
            on_response(lambda p, b, r: _set(r, output=[]), path=RESPONSES),
            "output has no message item: []",
        ),
        ("role", on_response(lambda p, b, r: _message_item(r).update(role="user"), path=RESPONSES), "['user']"),
        (
            "part-type",
            on_response(lambda p, b, r: _message_item(r)["content"][0].update(type="text"), path=RESPONSES),
            "'type': 'text'",
        ),
        ("id", on_response(lambda p, b, r: _set(r, id=""), path=RESPONSES), "id is ''"),
        (
            "streams-by-default",
            answer_when(lambda p, b: p == RESPONSES and "stream" not in b, 200, "data: {}"),
            'got:      "data: {}"',
        ),
        (
            "created_at",
            on_response(lambda p, b, r: _set(r, created_at="today"), path=RESPONSES),
            "created_at is 'today'",
        ),
    ],
    "responses.usage": [
        ("over-limit", _usage(output_tokens=20, total_tokens=71), '"output_tokens": 20'),
        ("zero", _usage(input_tokens=0, total_tokens=8), '"input_tokens": 0'),
        ("cached", _details("input_tokens_details", "cached_tokens", "3"), '"cached_tokens": "3"'),
        ("reasoning", _details("output_tokens_details", "reasoning_tokens", 99), '"reasoning_tokens": 99'),
        ("none", on_response(lambda p, b, r: _set(r, usage=None), path=RESPONSES), "got:      null"),
    ],
    "responses.stream-events": [
        ("first", on_events(_without("response.created"), path=RESPONSES), '["response.in_progress"'),
        ("stray-delta", on_events(_stray_delta, path=RESPONSES), '["msg-bogus"]'),
        (
            "lost-delta",
            on_events(_without("response.output_text.delta", first_only=True), path=RESPONSES),
            "the deltas to join",
        ),
        ("event-name", on_events(_misnamed_event, path=RESPONSES), "event: wrong"),
        ("no-terminal", on_events(lambda b, events: events[:-1], path=RESPONSES), '"response.output_item.done"]'),
    ],
    "responses.stream-terminal": [
        (
            "twice",
            on_events(lambda b, events: _renumbered(events + events[-1:]), path=RESPONSES),
            '["response.incomplete", "response.incomplete"]',
        ),
        (
            "not-last",
            on_events(lambda b, events: _renumbered(events[:-2] + events[-1:] + events[-2:-1]), path=RESPONSES),
            'got:      ["response.incomplete"]',
        ),
    ],
    "responses.structured": [
        (
            "invalid",
            on_response(
                lambda p, b, r: (
                    _message_item(r)["content"][0].update(text='{"ok": true, "extra": 1}') if b.get("text") else None
                ),
                path=RESPONSES,
            ),
            "'extra' was unexpected",
        ),
    ],
    "responses.retrieve": [
        (
            "text",
            on_response(
                lambda p, b, r: _message_item(r)["content"][0].update(
                    text=_message_item(r)["content"][0]["text"] + "!"
                ),
                path=RESPONSES,
            ),
            "!'",
        ),
    ],
    "responses.cancel": [
        (
            "unknown-id",
            answer_when(lambda p, b: "does_not_exist" in p, 500, {"detail": "boom"}),
            'HTTP 500: {"detail": "boom"}',
        ),
        (
            "refused",
            answer_when(lambda p, b: p.endswith("/cancel") and "does_not_exist" not in p, 400, error_body("no")),
            "HTTP 400",
        ),
    ],
    "responses.errors": [
        ("unknown-id", answer_when(lambda p, b: "does_not_exist" in p, 500, {"detail": "boom"}), "HTTP 500"),
        (
            "envelope",
            answer_when(lambda p, b: p == RESPONSES and b.get("max_output_tokens") == -1, 400, {"detail": "bad"}),
            '{"detail": "bad"}',
        ),
    ],
    "messages.create": [
        ("type", on_response(lambda p, b, r: _set(r, type="msg"), path=MESSAGES), "type is 'msg'"),
        ("role", on_response(lambda p, b, r: _set(r, role="model"), path=MESSAGES), "role is 'model'"),
        ("id", on_response(lambda p, b, r: _set(r, id=None), path=MESSAGES), "id is None"),
        (
            "stop-reason",
            on_response(lambda p, b, r: _set(r, stop_reason="length"), path=MESSAGES),
            "stop_reason is 'length'",
        ),
        (
            "content",
            on_response(lambda p, b, r: _set(r, content=[{"type": "output_text", "text": "x"}]), path=MESSAGES),
            "content has no text block",
        ),
        ("usage", on_response(lambda p, b, r: r["usage"].update(output_tokens=0), path=MESSAGES), "'output_tokens': 0"),
    ],
    "messages.stop-sequence": [
        (
            "reason",
            on_response(
                lambda p, b, r: _set(r, stop_reason="end_turn") if _stop_fired(p, b, r) else None, path=MESSAGES
            ),
            '"stop_reason": "end_turn"',
        ),
        (
            "text",
            on_response(
                lambda p, b, r: (
                    r["content"][0].update(text=r["content"][0]["text"] + r["stop_sequence"])
                    if _stop_fired(p, b, r)
                    else None
                ),
                path=MESSAGES,
            ),
            "'text': '",
        ),
    ],
    "messages.stream-events": [
        ("start", on_events(_without("message_start"), path=MESSAGES), "got:      content_block_start"),
        (
            "stray-delta",
            on_events(
                lambda b, events: [{**e, "index": 1} if _typed("content_block_delta")(e) else e for e in events],
                path=MESSAGES,
            ),
            '"stray deltas": [1',
        ),
        ("lost-delta", on_events(_without("content_block_delta", first_only=True), path=MESSAGES), "'text': '"),
        ("event-name", on_events(_misnamed_event, path=MESSAGES), "event: wrong"),
    ],
    "messages.errors": [
        (
            "accepted",
            answer_when(lambda p, b: p == MESSAGES and "max_tokens" not in b, 200, {"type": "message"}),
            "HTTP 200",
        ),
        (
            "no-message",
            answer_when(
                lambda p, b: p == MESSAGES and "max_tokens" not in b,
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": ""}},
            ),
            "error.message is not",
        ),
    ],
}


def _stop_reason_streamed(reason: str) -> Callable[[dict, list], list]:
    return lambda body, events: [
        {**e, "delta": {**e["delta"], "stop_reason": reason}} if _typed("message_delta")(e) else e for e in events
    ]


MUTATIONS |= {
    "sdk.responses": on_events(
        lambda body, events: events[:-1] + [{k: v for k, v in events[-1].items() if k != "response"}], path=RESPONSES
    ),
    "sdk.responses-async": on_response(lambda p, b, r: _set(r, output="Sure."), path=RESPONSES),
    "sdk.anthropic": on_response(lambda p, b, r: _set(r, content="Sure."), path=MESSAGES),
}
EXPECTED_IN_MESSAGE |= {
    "sdk.responses": "the SDK to consume a response and its stream",
    "sdk.responses-async": "the SDK to consume a response",
    "sdk.anthropic": "the SDK to consume a message and its stream",
}
BRANCHES |= {
    "sdk.responses": [
        ("stream", on_events(_without("response.output_text.delta", first_only=True), path=RESPONSES), '"deltas": "')
    ],
    "sdk.anthropic": [
        (
            "stream-text",
            on_events(_without("content_block_delta", first_only=True), path=MESSAGES),
            '"streamed": {"text": "',
        ),
        ("stream-stop", on_events(_stop_reason_streamed("end_turn"), path=MESSAGES), '"stop_reason": "end_turn"'),
    ],
}


# --- reasoning and parallel tool calls ------------------------------------------------
def _fragments(events: list) -> list[dict]:
    return [
        f
        for e in events
        if isinstance(e, dict) and e.get("choices")
        for f in (e["choices"][0].get("delta") or {}).get("tool_calls") or []
    ]


def _one_index(body: dict, events: list) -> list:
    events = copy.deepcopy(events)
    for frag in _fragments(events):
        frag["index"] = 0
    return events


def _swapped_calls(body: dict, events: list) -> list:
    events = copy.deepcopy(events)
    for frag in _fragments(events):
        frag["index"] = 1 - frag["index"]
    return events


def _first_arguments_cut(body: dict, events: list) -> list:
    """The second half of call 0's arguments never sent: its fragments join into '{"x'."""
    last = max(
        i
        for i, e in enumerate(events)
        if any(f.get("index") == 0 and (f.get("function") or {}).get("arguments") for f in _fragments([e]))
    )
    return events[:last] + events[last + 1 :]


def reasoning(
    answer_names: tuple[str, ...] = ("reasoning",),
    stream_name: str = "reasoning",
    streamed: str = "let me think",
    content_prefix: str = "",
) -> Deviation:
    """A reasoning model behind a reasoning parser: the thought beside the content, in the answer and before it in the
    stream."""

    def response(p: str, body: dict, resp: dict) -> dict:
        if p == CHAT and not body.get("tools"):
            for choice in resp["choices"]:
                choice["message"].update(dict.fromkeys(answer_names, "let me think"))
                choice["message"]["content"] = content_prefix + (choice["message"]["content"] or "")
        return resp

    def events(p: str, body: dict, evs: list) -> list:
        if p != CHAT or body.get("tools"):
            return evs
        first = next(i for i, e in enumerate(evs) if isinstance(e, dict) and e.get("choices"))
        head = copy.deepcopy(evs[first])
        head["choices"][0]["delta"] = {stream_name: streamed}
        return evs[: first + 1] + [head] + evs[first + 1 :]

    return Deviation(response=response, events=events)


EXERCISED_ONLY_BY_DIALECTS = {"chat.reasoning": reasoning()}
MUTATIONS |= {
    "chat.reasoning": reasoning(stream_name="reasoning_content"),
    "tools.parallel": on_events(_one_index),
}
EXPECTED_IN_MESSAGE |= {
    "chat.reasoning": '["reasoning_content"]',
    "tools.parallel": "call 0 changed id",
}
BRANCHES |= {
    "chat.reasoning": [
        ("think-tags", reasoning(content_prefix="<think>let me think</think>"), "<think>let me think</think>"),
        (
            "two-names",
            reasoning(answer_names=("reasoning", "reasoning_content")),
            '"reasoning_content": "let me think"',
        ),
        ("stream-text", reasoning(streamed="hmm"), '"reasoning": "hmm"'),
    ],
    "tools.parallel": [
        ("no-id", on_events(_tool_fragment_without_id), "has no id"),
        (
            "duplicate-ids",
            on_response(
                lambda p, b, r: (
                    [c.update(id="call_1") for c in _choice(r)["message"]["tool_calls"]]
                    if b.get("parallel_tool_calls")
                    else None
                )
            ),
            "duplicate call ids",
        ),
        ("order", on_events(_swapped_calls), "the same calls as the non-streamed answer"),
        ("arguments", on_events(_first_arguments_cut), "is not valid JSON"),
    ],
}


# --- the model an answer names; Anthropic's request rules -----------------------------------------------------------
MODEL_CHECKS = ("chat.model", "completions.model", "responses.model", "messages.model")
ANTHROPIC_MESSAGE = {
    "id": "msg-canned", "type": "message", "role": "assistant", "model": MODEL,
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}  # fmt: skip


def messages_accept(predicate: Callable[[dict], bool]) -> Deviation:
    """/v1/messages answers a message to the requests ``predicate`` picks (those the reference refuses)."""
    return answer_when(lambda p, b: p == MESSAGES and predicate(b), 200, ANTHROPIC_MESSAGE)


def _above(name: str, limit: float) -> Callable[[dict], bool]:
    return lambda b: isinstance(b.get(name), (int, float)) and b[name] > limit


def _role(role: str) -> Callable[[dict], bool]:
    return lambda b: any(isinstance(m, dict) and m.get("role") == role for m in b.get("messages") or [])


def _messages_errors_as(status: int, body: Any) -> Deviation:
    """Every request /v1/messages refuses, refused with ``status`` and ``body``."""

    def request(path: str, b: dict):
        if path != MESSAGES:
            return None
        good = (
            all(k in b for k in ("model", "max_tokens", "messages"))
            and not _above("temperature", 1)(b)
            and not _above("top_p", 1)(b)
            and (b.get("top_k") or 0) >= 0
            and b["max_tokens"] >= 0
            and not _role("developer")(b)
            and not _role("tool")(b)
        )
        return None if good else (status, body)

    return Deviation(request=request)


MUTATIONS |= {check_id: wrong_model() for check_id in MODEL_CHECKS} | {
    "messages.parameter-ranges": messages_accept(_above("temperature", 1)),  # OpenAI's range, 0 to 2
    "messages.roles": messages_accept(_role("developer")),
    "messages.required-fields": messages_accept(lambda b: "model" not in b),  # the served model filled in
}
EXPECTED_IN_MESSAGE |= {check_id: "got:      another-model" for check_id in MODEL_CHECKS} | {
    "messages.parameter-ranges": "expected: HTTP 400 for temperature=1.5\ngot:      HTTP 200: ",
    "messages.roles": "expected: HTTP 400 for a 'developer' message\ngot:      HTTP 200: ",
    "messages.required-fields": "expected: HTTP 400 for no model\ngot:      HTTP 200: ",
}
OPENAI_ENVELOPE = error_body("Field required", param="model")


def _without_model(event: Any) -> Any:
    """A streamed chunk less its ``model`` key."""
    return {k: v for k, v in event.items() if k != "model"} if isinstance(event, dict) else event


BRANCHES |= {
    "chat.model": [
        ("stream-only", Deviation(events=wrong_model().events), "'another-model' in 10 of 10 event(s)"),
        ("answer-only", Deviation(response=wrong_model().response), "got:      another-model"),
        # model is required in the answer and in every chunk (CreateChatCompletionResponse, ...StreamResponse)
        ("answer-without-model", on_response(lambda p, b, r: r.pop("model")), "got:      no model key"),
        (
            "chunk-without-model",
            on_events(lambda b, events: [_without_model(e) if i == 2 else e for i, e in enumerate(events)]),
            "no model key (or null) in 1 of 10 event(s)",
        ),
    ],
    "responses.model": [
        ("stream-only", Deviation(events=wrong_model().events), "'another-model' in 3 of "),
    ],
    "messages.model": [("stream-only", Deviation(events=wrong_model().events), "'another-model' in 1 of ")],
    "messages.parameter-ranges": [
        ("top_p", messages_accept(_above("top_p", 1)), "HTTP 400 for top_p=1.5"),
        ("top_k", messages_accept(lambda b: (b.get("top_k") or 0) < 0), "HTTP 400 for top_k=-1"),
        ("max_tokens", messages_accept(lambda b: b.get("max_tokens", 0) < 0), "HTTP 400 for max_tokens=-1"),
        (
            "status-422",
            _messages_errors_as(422, {"type": "error", "error": {"type": "invalid_request_error", "message": "m"}}),
            "got:      HTTP 422: ",
        ),
        ("openai-envelope", _messages_errors_as(400, OPENAI_ENVELOPE), 'the body is not {"type": "error"'),
        (
            "error-type",
            _messages_errors_as(400, {"type": "error", "error": {"type": "api_error", "message": "m"}}),
            "error.type is 'api_error', not 'invalid_request_error'",
        ),
    ],
    "messages.roles": [("tool", messages_accept(_role("tool")), "HTTP 400 for a 'tool' message")],
    "messages.required-fields": [
        ("messages", messages_accept(lambda b: "messages" not in b), "HTTP 400 for no messages"),
        ("openai-envelope", _messages_errors_as(400, OPENAI_ENVELOPE), 'the body is not {"type": "error"'),
    ],
}


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
        if body.get("tools") and isinstance(e, dict) and e.get("choices") and e["choices"][0].get("finish_reason"):
            e["choices"][0]["finish_reason"] = "length"
    return events


def posted(fake: FakeServer, path: str) -> list[Any]:
    """The bodies POSTed to ``path``, in order."""
    return [body for method, p, body in fake.requests if method == "POST" and p == path]
