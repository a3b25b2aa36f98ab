"""How each check in `pytest_infer/conformance/checks/sdk.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

import base64
import copy
import json
import struct
from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.testing.fakeserver import Deviation, error_body

from ..deviations import (
    CHAT,
    COMPLETIONS,
    MESSAGES,
    RESPONSES,
    _choice,
    _embeddings,
    _finish_twice,
    _first_arguments_cut,
    _fragments,
    _message_item,
    _no_finish,
    _set,
    _tool_fragment_without_id,
    _typed,
    _vector,
    _without,
    answer_when,
    canned_chat,
    chain,
    embeddings,
    on_events,
    on_response,
    sdk_breaking_error,
)
from . import Proof


def empty_messages(p: str, body: dict) -> bool:
    return p == CHAT and body.get("messages") == []


def _rename_choices(p: str, body: dict, resp: dict) -> None:
    resp["results"] = resp.pop("choices")


def _stop_reason_streamed(reason: str) -> Callable[[dict, list], list]:
    return lambda body, events: [
        {**e, "delta": {**e["delta"], "stop_reason": reason}} if _typed("message_delta")(e) else e
        for e in events
    ]


def _second_twin(change: Callable[[dict, dict], None], path: str = CHAT) -> Deviation:
    """``change(body, answer)`` on the second of two identical non-streamed requests in a row: a
    check's raw request and the SDK's twin of it. Only the SDK's answer changes, whatever ran on the
    server before."""
    last: list[str] = []

    def response(p: str, body: dict, resp: dict) -> dict:
        if p != path:
            return resp
        key = json.dumps(body, sort_keys=True)
        if last == [key]:
            last.clear()
            resp = copy.deepcopy(resp)
            change(body, resp)
        else:
            last[:] = [key]
        return resp

    return Deviation(response=response)


def _extra_chunk(text: str, path: str = CHAT) -> Deviation:
    """One more text chunk before the one that finishes, so the stream's text is the answer's plus
    ``text``."""

    def events_(body: dict, events: list) -> list:
        last = max(
            i
            for i, e in enumerate(events)
            if isinstance(e, dict) and e.get("choices") and e["choices"][0].get("finish_reason")
        )
        extra = copy.deepcopy(events[last])
        extra["choices"][0]["finish_reason"] = None
        if path == CHAT:
            extra["choices"][0]["delta"] = {"content": text}
        else:
            extra["choices"][0]["text"] = text
        return events[:last] + [extra] + events[last:]

    return on_events(events_, path)


def _without_usage_chunk(body: dict, events: list) -> list:
    return [
        e for e in events if not (isinstance(e, dict) and e.get("usage") and not e.get("choices"))
    ]


def _b64(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def _sdk_vectors(embedding: Callable[[str], Any]) -> Deviation:
    """The base64 answer (what the SDK asks for) carries ``embedding(text)``; the float answer is
    left as it is."""

    def request(p: str, body: dict):
        if p != "/v1/embeddings" or body.get("encoding_format") != "base64":
            return None
        answer = embeddings(body)
        for item, text in zip(answer["data"], body["input"], strict=True):
            item["embedding"] = embedding(text)
        return 200, answer

    return Deviation(request=request)


def _float32(values: list[float]) -> list[float]:
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def _tool_stream(change: Callable[[list], list], *, seed: int | None = None) -> Deviation:
    """``change(events)`` on the SDK's streamed forced call (optionally for one seed only)."""

    def events_(body: dict, events: list) -> list:
        if not body.get("tools") or seed not in (None, body.get("seed")):
            return events
        return change(copy.deepcopy(events))

    return on_events(events_)


def _finish_length(events: list) -> list:
    for e in events:
        if isinstance(e, dict) and e.get("choices") and e["choices"][0].get("finish_reason"):
            e["choices"][0]["finish_reason"] = "length"
    return events


def _without_fragments(events: list) -> list:
    return [
        e
        for e in events
        if not (
            isinstance(e, dict)
            and e.get("choices")
            and (e["choices"][0].get("delta") or {}).get("tool_calls")
        )
    ]


def _fragments_changed(change: Callable[[list[dict]], Any]) -> Callable[[list], list]:
    def apply(events: list) -> list:
        change(_fragments(events))
        return events

    return apply


def _error_after_first_fragment(events: list) -> list:
    first = next(i for i, e in enumerate(events) if _fragments([e]))
    return events[: first + 1] + [
        {
            "error": {
                "message": "tool engine overloaded",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
        "[DONE]",
    ]


def _final_text(text: str) -> Callable[[dict, list], list]:
    """The terminal event's response says ``text``; the deltas before it are left as they are."""

    def change(body: dict, events: list) -> list:
        events = copy.deepcopy(events)
        _message_item(events[-1]["response"])["content"][0]["text"] = text
        return events

    return change


def _sdk_message(b: dict) -> bool:
    """The anthropic SDK's create(): its body puts max_tokens first (the raw request puts model
    first) and does not stream."""
    return next(iter(b), None) != "model" and not b.get("stream")


def _sdk_message_changed(change: Callable[[dict], None]) -> Deviation:
    return on_response(lambda p, b, r: change(r) if _sdk_message(b) else None, path=MESSAGES)


def _sdk_response_text(text: str) -> Deviation:
    """The SDK's non-streamed responses.create() (sent without ``stream``; the raw request says
    ``stream: false``) says ``text``."""
    return on_response(
        lambda p, b, r: (
            _message_item(r)["content"][0].update(text=text) if "stream" not in b else None
        ),
        path=RESPONSES,
    )


_SHORT = _float32(_vector("hello world", 16)[:15])
# off by 1.5e-3 in the first value: over the tolerance of 1e-3 that values up to 1 get
_NEAR = _float32([_vector("hello world", 16)[0] + 0.0015] + _vector("hello world", 16)[1:])
# over 300 characters: the failure quotes the first 300, and the line after them
_LONG_COMPLETION = {"choices": [{"text": None}], "note": "0123456789" * 40}


PROOFS: dict[str, Proof] = {
    "sdk.anthropic": Proof(
        mutation=on_response(lambda p, b, r: _set(r, content="Sure."), path=MESSAGES),
        says="the SDK to consume a message and its stream",
        sends={"POST /v1/messages": "max_tokens messages model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "stream-text",
                on_events(_without("content_block_delta", first_only=True), path=MESSAGES),
                '"streamed": {"text": "',
            ),
            (
                "stream-stop",
                on_events(_stop_reason_streamed("end_turn"), path=MESSAGES),
                '"stop_reason": "end_turn"',
            ),
            (
                "text",
                _sdk_message_changed(lambda r: r["content"][0].update(text="SDK-only text")),
                "SDK-only text",
            ),
            (
                "stop-reason",
                _sdk_message_changed(lambda r: r.update(stop_reason="refusal")),
                '"stop_reason": "refusal"',
            ),
        ],
    ),
    "sdk.chat": Proof(
        mutation=on_response(
            lambda p, b, r: _rename_choices(p, b, r) if not b.get("stream") else None
        ),
        says="the SDK to consume a chat completion",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        branches=[
            (
                "content",
                _second_twin(lambda b, r: _choice(r)["message"].update(content="SDK-only answer")),
                "SDK-only answer",
            ),
            (
                "total_tokens",
                _second_twin(lambda b, r: r["usage"].update(total_tokens=999)),
                '"total_tokens": 999',
            ),
            ("id", on_response(lambda p, b, r: r.update(id="")), '"id": ""'),
        ],
    ),
    "sdk.chat-async": Proof(
        mutation=on_response(
            lambda p, b, r: _rename_choices(p, b, r) if not b.get("stream") else None
        ),
        says="the SDK to consume a chat completion",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        branches=[
            (
                "content",
                _second_twin(lambda b, r: _choice(r)["message"].update(content="SDK-only answer")),
                "SDK-only answer",
            ),
        ],
    ),
    "sdk.chat-stream": Proof(
        mutation=on_events(sdk_breaking_error),
        says="APIError",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model stream stream_options "
            "temperature"
        },
        gives_up={"empty-object": Inconclusive},
        branches=[
            ("text", _extra_chunk("EXTRA"), "EXTRA"),
            (
                "two-finish-reasons",
                on_events(_finish_twice),
                '"finish_reasons": ["stop", "length"]',
            ),
            ("no-finish-reason", on_events(_no_finish), '"finish_reasons": []'),
            ("no-usage", on_events(_without_usage_chunk), '"usage": "None"'),
        ],
    ),
    "sdk.chat-stream-async": Proof(
        mutation=on_events(sdk_breaking_error),
        says="APIError",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        gives_up={"empty-object": Inconclusive},
        branches=[
            ("text", _extra_chunk("EXTRA"), "EXTRA"),
            (
                "two-finish-reasons",
                on_events(_finish_twice),
                '"finish_reasons": ["stop", "length"]',
            ),
        ],
    ),
    "sdk.completions": Proof(
        mutation=on_events(
            _sdk_breaking_error_completions := lambda body, events: (
                events[:2]
                + [
                    {
                        "error": {
                            "message": "overloaded",
                            "type": "server_error",
                            "param": None,
                            "code": None,
                        }
                    },
                    "[DONE]",
                ]
            ),
            COMPLETIONS,
        ),
        says="APIError",
        sends={"POST /v1/completions": "max_tokens model prompt stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "not-an-object",
                answer_when(lambda p, b: p == COMPLETIONS and not b.get("stream"), 200, ["a list"]),
                '["a list"]',
            ),
            (
                "text-not-string",
                on_response(lambda p, b, r: r["choices"][0].update(text=7), COMPLETIONS),
                '"text": 7',
            ),
            (
                "no-choices",
                on_response(lambda p, b, r: r.update(choices=[]), COMPLETIONS),
                '"choices": []',
            ),
            (
                "long",
                answer_when(
                    lambda p, b: p == COMPLETIONS and not b.get("stream"), 200, _LONG_COMPLETION
                ),
                json.dumps(_LONG_COMPLETION)[280:300] + "\nreproduce: ",
            ),
            (
                "sync",
                _second_twin(
                    lambda b, r: r["choices"][0].update(text="SDK-only text"), COMPLETIONS
                ),
                "SDK-only text",
            ),
            ("stream", _extra_chunk("EXTRA", COMPLETIONS), "EXTRA"),
        ],
    ),
    "sdk.embeddings": Proof(
        mutation=_embeddings(float64=True),
        says="floats equal",
        sends={"POST /v1/embeddings": "encoding_format input model"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("values", _sdk_vectors(lambda text: _b64([0.25] * 16)), "[0.25, 0.25, 0.25, 0.25]"),
            (
                "shorter",
                _sdk_vectors(lambda text: _b64(_vector(text, 16)[:15])),
                json.dumps(_SHORT[:4]),
            ),
            (
                "near",
                _sdk_vectors(
                    lambda text: _b64([_vector(text, 16)[0] + 0.0015] + _vector(text, 16)[1:])
                ),
                json.dumps(_NEAR[:4]),
            ),
            ("not-base64", _sdk_vectors(lambda text: "abc"), "Incorrect padding"),
            # these two crashed the check (TypeError on len() / a - b) before it judged what the SDK
            # hands on unchanged
            ("number", _sdk_vectors(lambda text: 7), "got:      7"),
            ("strings", _sdk_vectors(lambda text: ["0.25"] * 16), '["0.25", "0.25"'),
        ],
    ),
    "sdk.errors": Proof(
        mutation=answer_when(empty_messages, 500, error_body("internal error", "server_error")),
        says="InternalServerError",
        sends={"POST /v1/chat/completions": "max_tokens messages model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (
                "unknown-model-400",
                answer_when(
                    lambda p, b: p == CHAT and b.get("model") == "no-such-model-pytest-infer",
                    400,
                    error_body("no such model here"),
                ),
                "no such model here",
            ),
            ("accepted", answer_when(empty_messages, 200, canned_chat()), "no exception"),
            (
                "no-body",
                answer_when(empty_messages, 400, {"error": None}),
                (
                    "expected: an exception carrying the server's message and body\ngot:      "
                    "BadRequestError('Error code:"
                    " 400')\nreproduce: curl -sS -X POST "
                ),
            ),
        ],
    ),
    "sdk.errors-stream-async": Proof(
        mutation=answer_when(
            lambda p, b: empty_messages(p, b) and b.get("stream"), 200, canned_chat()
        ),
        says="BadRequestError when the stream is opened",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (
                "other-error",
                answer_when(
                    lambda p, b: empty_messages(p, b) and b.get("stream"),
                    500,
                    error_body("engine down", "server_error"),
                ),
                "engine down",
            ),
        ],
    ),
    "sdk.responses": Proof(
        mutation=on_events(
            lambda body, events: (
                events[:-1] + [{k: v for k, v in events[-1].items() if k != "response"}]
            ),
            path=RESPONSES,
        ),
        says="the SDK to consume a response and its stream",
        sends={"POST /v1/responses": "input max_output_tokens model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "stream",
                on_events(_without("response.output_text.delta", first_only=True), path=RESPONSES),
                '"deltas": "',
            ),
            ("output_text", _sdk_response_text("SDK-only text"), "SDK-only text"),
            ("final", on_events(_final_text("final text"), path=RESPONSES), "final text"),
            (
                "no-terminal",
                on_events(lambda b, events: events[:-1], path=RESPONSES),
                '"final": null',
            ),
        ],
    ),
    "sdk.responses-async": Proof(
        mutation=on_response(lambda p, b, r: _set(r, output="Sure."), path=RESPONSES),
        says="the SDK to consume a response",
        sends={"POST /v1/responses": "input max_output_tokens model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("output_text", _sdk_response_text("SDK-only text"), "SDK-only text"),
        ],
    ),
    "sdk.tool-stream": Proof(
        mutation=on_events(_tool_fragment_without_id),
        says="calls with id",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model seed stream temperature "
            "tool_choice tools"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("no-call", _tool_stream(_without_fragments), "got:      {}"),
            ("arguments", on_events(_first_arguments_cut), '"arguments": "{\\"x\\""'),
            (
                "no-name",
                _tool_stream(
                    _fragments_changed(lambda frags: frags[0]["function"].update(name=None))
                ),
                '"name": ""',
            ),
            ("sdk-error", _tool_stream(_error_after_first_fragment), "tool engine overloaded"),
            (
                "after-length",
                chain(
                    _tool_stream(_finish_length, seed=1234),
                    _tool_stream(
                        _fragments_changed(lambda frags: frags[0]["function"].update(name=None)),
                        seed=1235,
                    ),
                ),
                '"name": ""',
            ),
            (
                "length-without-fragments",
                _tool_stream(lambda events: _finish_length(_without_fragments(events))),
                "got:      {}",
            ),
        ],
    ),
}
