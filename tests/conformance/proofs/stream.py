"""How each check in `pytest_infer/conformance/checks/stream.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

import copy
from collections.abc import Callable

from pytest_infer.outcomes import Inconclusive, NotExercised
from pytest_infer.testing.fakeserver import Deviation

from ..deviations import (
    CHAT,
    _finish_twice,
    _no_finish,
    answer_when,
    canned_chat,
    content_events,
    on_events,
    sdk_breaking_error,
)
from . import Proof


def _cumulative(body: dict, events: list) -> list:
    """TRT-LLM#3280: each chunk carries the whole text so far."""
    text = ""
    for i in content_events(events):
        text += events[i]["choices"][0]["delta"]["content"]
        events[i] = copy.deepcopy(events[i])
        events[i]["choices"][0]["delta"]["content"] = text
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


def _error_mid_stream(body: dict, events: list) -> list:
    idx = content_events(events)
    at = idx[1] if len(idx) > 1 else 1
    return events[:at] + [{"error": "the engine crashed"}] + events[at:]


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


ERROR = {"error": {"message": "engine hiccup", "type": "server_error", "param": None, "code": None}}


def _each_chunk(
    change: Callable[[int, dict], None], when: Callable[[dict], bool] = lambda body: True
) -> Deviation:
    """``change(i, chunk)`` on a copy of every JSON chunk of the chat stream (``i`` counts
    chunks)."""

    def events_(body: dict, events: list) -> list:
        if not when(body):
            return events
        out = copy.deepcopy(events)
        for i, e in enumerate(e for e in out if isinstance(e, dict)):
            change(i, e)
        return out

    return on_events(events_)


def _first_choice(change: Callable[[dict], None]) -> Callable[[int, dict], None]:
    return lambda i, c: change(c["choices"][0]) if i == 0 else None


def _usage_chunk(usage: object) -> Deviation:
    return _each_chunk(
        lambda i, c: c.update(usage=usage) if "usage" in c else None,
        lambda body: bool((body.get("stream_options") or {}).get("include_usage")),
    )


def _other_index_first(body: dict, events: list) -> list:
    """A chunk of choice 1 (with the role) before choice 0, whose first delta lacks the role."""
    events = copy.deepcopy(events)
    other = copy.deepcopy(events[0])
    other["choices"][0]["index"] = 1
    del events[0]["choices"][0]["delta"]["role"]
    return [other, *events]


def _no_index(body: dict, events: list) -> list:
    """Choices without an index (read as 0), the first delta without the role."""
    events = copy.deepcopy(events)
    for e in events:
        for ch in e.get("choices") or [] if isinstance(e, dict) else []:
            ch.pop("index", None)
    del events[0]["choices"][0]["delta"]["role"]
    return events


def _no_index_finished_twice(body: dict, events: list) -> list:
    events = _no_index(body, events)
    events[1]["choices"][0]["finish_reason"] = "stop"
    return events


def _second_choice_finished_twice(body: dict, events: list) -> list:
    """Beside choice 0, a choice 1 that gets a finish_reason on its first chunk as well as on its
    last."""
    out: list = []
    for e in copy.deepcopy(events):
        out.append(e)
        if isinstance(e, dict) and e.get("choices"):
            twin = copy.deepcopy(e)
            for ch in twin["choices"]:
                ch["index"] = 1
            out.append(twin)
    next(
        e for e in out if isinstance(e, dict) and e.get("choices") and e["choices"][0]["index"] == 1
    )["choices"][0]["finish_reason"] = "stop"
    return out


def _error_at(where: str) -> Callable[[dict, list], list]:
    def change(body: dict, events: list) -> list:
        if where == "first":
            return [ERROR, *events]
        return events[: content_events(events)[0] + 1] + [
            ERROR
        ]  # last, but never followed by [DONE]

    return change


def _empty_choices_chunk(body: dict, events: list) -> list:
    head = {k: v for k, v in events[0].items() if k != "choices"}
    return events[:-1] + [{**head, "choices": []}, events[-1]]


PROOFS: dict[str, Proof] = {
    "stream.chunk-identity": Proof(
        mutation=on_events(
            lambda body, events: [events[0], {**events[1], "id": "chatcmpl-other"}, *events[2:]]
        ),
        says="one non-empty id",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            (
                "object",
                _each_chunk(lambda i, c: c.update(object="chat.completion") if i == 1 else None),
                '["chat.completion", "chat.completion.chunk"]',
            ),
            ("empty-id", _each_chunk(lambda i, c: c.update(id="")), 'got:      [""]'),
            (
                "created-changes",
                _each_chunk(lambda i, c: c.update(created=1) if i == 1 else None),
                '["1", "',
            ),
            ("created-not-int", _each_chunk(lambda i, c: c.update(created="today")), '["today"]'),
            (
                "model-missing",
                _each_chunk(lambda i, c: c.pop("model") if i == 1 else None),
                '["None", "fake-model"]',
            ),
            (
                "model-changes",
                _each_chunk(lambda i, c: c.update(model="other") if i == 1 else None),
                '["fake-model", "oth',
            ),
        ],
    ),
    "stream.error-event": Proof(
        mutation=on_events(_error_mid_stream),
        says="error event",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        gives_up={"empty-object": NotExercised, "not-an-object": NotExercised},
        branches=[
            ("not-last", on_events(_error_at("first")), '{"error": {"message": "engine hiccup"'),
            ("no-done", on_events(_error_at("end")), '{"error": {"message": "engine hiccup"'),
            (
                "message-not-string",
                on_events(
                    lambda body, events: (
                        events[:2] + [{"error": {"message": 5, "type": "server_error"}}, "[DONE]"]
                    )
                ),
                '"message": 5',
            ),
        ],
        exercised_by=on_events(sdk_breaking_error),
    ),
    "stream.first-delta-role": Proof(
        mutation=on_events(
            lambda body, events: [
                {**events[0], "choices": [{**events[0]["choices"][0], "delta": {"content": ""}}]},
                *events[1:],
            ]
        ),
        says="role 'assistant'",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            (
                "role",
                _each_chunk(_first_choice(lambda ch: ch["delta"].update(role="user"))),
                '"role": "user"',
            ),
            ("other-index-first", on_events(_other_index_first), 'got:      {"content": ""}'),
            ("no-index", on_events(_no_index), 'got:      {"content": ""}'),
            (
                "no-choice-0",
                _each_chunk(lambda i, c: [ch.update(index=1) for ch in c["choices"]]),
                "got:      null",
            ),
            (
                "choices-not-list",
                _each_chunk(lambda i, c: c.update(choices={"index": 0})),
                "got:      null",
            ),  # crashed,
        ],
    ),
    "stream.include-usage": Proof(
        mutation=on_events(_usage_everywhere),
        says="usage only in the last chunk",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model stream stream_options "
            "temperature"
        },
        branches=[
            (
                "choices",
                on_events(_usage_chunk_with_choices),
                '"choices": [{"index": 0, "delta": {}, "finish_reason": null}]',
            ),
            ("sum", on_events(_usage_that_does_not_add_up), '"total_tokens": 9'),
            (
                "zero-completion",
                _usage_chunk({"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}),
                '"completion_tokens": 0',
            ),
            (
                "over-limit",
                _usage_chunk({"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}),
                '"completion_tokens": 9',
            ),
            (
                "not-int",
                _usage_chunk({"prompt_tokens": "3", "completion_tokens": 2, "total_tokens": 5}),
                '"prompt_tokens": "3"',
            ),
            ("usage-not-object", _usage_chunk(5), "got:      5\n"),  # crashed,
        ],
    ),
    "stream.multibyte-text": Proof(
        mutation=on_events(_bytes_decoded_alone),
        says="the non-streamed text",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        gives_up={"empty-object": Inconclusive},
    ),
    "stream.one-finish-reason": Proof(
        mutation=on_events(_finish_twice),
        says="one non-null finish_reason",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            ("none", on_events(_no_finish), '{"0": 0}'),
            ("no-choices", _each_chunk(lambda i, c: c.update(choices=[])), "got:      {}"),
            ("no-index", on_events(_no_index_finished_twice), '{"0": 2}'),
            (
                "choice-not-object",
                _each_chunk(lambda i, c: c.update(choices=["x"])),
                "{\"'x'\": 0}",
            ),  # crashed
            (
                "second-choice-twice",
                on_events(_second_choice_finished_twice),
                'got:      {"0": 1, "1": 2}',
            ),
        ],
    ),
    "stream.options-without-stream": Proof(
        mutation=answer_when(
            lambda p, b: p == CHAT and b.get("stream_options") is not None and not b.get("stream"),
            200,
            canned_chat(),
        ),
        says="HTTP 200",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream stream_options"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
    ),
    "stream.sse-framing": Proof(
        mutation=on_events(lambda body, events: events[:-1]),
        says="[DONE]",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            ("no-chunks", on_events(lambda body, events: ["[DONE]"]), "data: [DONE]"),
        ],
    ),
    "stream.stop": Proof(
        mutation=on_events(_stop_leak),
        says="finish_reason 'stop'",
        sends={
            "POST /v1/chat/completions": "logprobs max_tokens messages model stop stream "
            "temperature"
        },
        gives_up={"empty-object": Inconclusive},
        branches=[
            (
                "finish-reason",
                _each_chunk(
                    lambda i, c: [
                        ch.update(finish_reason="length")
                        for ch in c["choices"]
                        if ch.get("finish_reason")
                    ],
                    lambda body: bool(body.get("stop")),
                ),
                '"finish_reasons": ["length"]',
            ),
        ],
    ),
    "stream.text-equals-nonstream": Proof(
        mutation=on_events(_cumulative),
        says="non-streamed text",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            # crashed the check (AttributeError)
            (
                "choice-not-object",
                _each_chunk(lambda i, c: c.update(choices=["x"])),
                "got:      \nreproduce",
            ),
        ],
    ),
    "stream.usage-off": Proof(
        mutation=on_events(_usage_always),
        says="no usage",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            (
                "usage-in-content-chunk",
                _each_chunk(
                    lambda i, c: (
                        c.update(
                            usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                        )
                        if i == 1
                        else None
                    )
                ),
                '"usage": {"prompt_tokens": 1',
            ),
            ("empty-choices", on_events(_empty_choices_chunk), '"choices": []'),
        ],
    ),
}
