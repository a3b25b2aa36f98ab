"""Further failure branches of the checks in `pytest_infer/conformance/checks/stream.py`, each its own deviation."""

from __future__ import annotations

import copy
from collections.abc import Callable

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import content_events, on_events

ERROR = {"error": {"message": "engine hiccup", "type": "server_error", "param": None, "code": None}}


def _each_chunk(change: Callable[[int, dict], None], when: Callable[[dict], bool] = lambda body: True) -> Deviation:
    """``change(i, chunk)`` on a copy of every JSON chunk of the chat stream (``i`` counts chunks)."""

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
    """Beside choice 0, a choice 1 that gets a finish_reason on its first chunk as well as on its last."""
    out: list = []
    for e in copy.deepcopy(events):
        out.append(e)
        if isinstance(e, dict) and e.get("choices"):
            twin = copy.deepcopy(e)
            for ch in twin["choices"]:
                ch["index"] = 1
            out.append(twin)
    next(e for e in out if isinstance(e, dict) and e.get("choices") and e["choices"][0]["index"] == 1)["choices"][0][
        "finish_reason"
    ] = "stop"
    return out


def _error_at(where: str) -> Callable[[dict, list], list]:
    def change(body: dict, events: list) -> list:
        if where == "first":
            return [ERROR, *events]
        return events[: content_events(events)[0] + 1] + [ERROR]  # last, but never followed by [DONE]

    return change


def _empty_choices_chunk(body: dict, events: list) -> list:
    head = {k: v for k, v in events[0].items() if k != "choices"}
    return events[:-1] + [{**head, "choices": []}, events[-1]]


BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "stream.sse-framing": [
        ("no-chunks", on_events(lambda body, events: ["[DONE]"]), "data: [DONE]"),
    ],
    "stream.chunk-identity": [
        (
            "object",
            _each_chunk(lambda i, c: c.update(object="chat.completion") if i == 1 else None),
            '["chat.completion", "chat.completion.chunk"]',
        ),
        ("empty-id", _each_chunk(lambda i, c: c.update(id="")), 'got:      [""]'),
        ("created-changes", _each_chunk(lambda i, c: c.update(created=1) if i == 1 else None), '["1", "'),
        ("created-not-int", _each_chunk(lambda i, c: c.update(created="today")), '["today"]'),
        ("model-missing", _each_chunk(lambda i, c: c.pop("model") if i == 1 else None), '["None", "fake-model"]'),
        ("model-changes", _each_chunk(lambda i, c: c.update(model="other") if i == 1 else None), '["fake-model", "oth'),
    ],
    "stream.first-delta-role": [
        ("role", _each_chunk(_first_choice(lambda ch: ch["delta"].update(role="user"))), '"role": "user"'),
        ("other-index-first", on_events(_other_index_first), 'got:      {"content": ""}'),
        ("no-index", on_events(_no_index), 'got:      {"content": ""}'),
        ("no-choice-0", _each_chunk(lambda i, c: [ch.update(index=1) for ch in c["choices"]]), "got:      null"),
        ("choices-not-list", _each_chunk(lambda i, c: c.update(choices={"index": 0})), "got:      null"),  # crashed
    ],
    "stream.text-equals-nonstream": [  # crashed the check (AttributeError)
        ("choice-not-object", _each_chunk(lambda i, c: c.update(choices=["x"])), "got:      \nreproduce"),
    ],
    "stream.one-finish-reason": [
        ("no-choices", _each_chunk(lambda i, c: c.update(choices=[])), "got:      {}"),
        ("no-index", on_events(_no_index_finished_twice), '{"0": 2}'),
        ("choice-not-object", _each_chunk(lambda i, c: c.update(choices=["x"])), "{\"'x'\": 0}"),  # crashed
        ("second-choice-twice", on_events(_second_choice_finished_twice), 'got:      {"0": 1, "1": 2}'),
    ],
    "stream.stop": [
        (
            "finish-reason",
            _each_chunk(
                lambda i, c: [ch.update(finish_reason="length") for ch in c["choices"] if ch.get("finish_reason")],
                lambda body: bool(body.get("stop")),
            ),
            '"finish_reasons": ["length"]',
        ),
    ],
    "stream.usage-off": [
        (
            "usage-in-content-chunk",
            _each_chunk(
                lambda i, c: (
                    c.update(usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}) if i == 1 else None
                )
            ),
            '"usage": {"prompt_tokens": 1',
        ),
        ("empty-choices", on_events(_empty_choices_chunk), '"choices": []'),
    ],
    "stream.include-usage": [
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
        ("usage-not-object", _usage_chunk(5), "got:      5\n"),  # crashed
    ],
    "stream.error-event": [
        ("not-last", on_events(_error_at("first")), '{"error": {"message": "engine hiccup"'),
        ("no-done", on_events(_error_at("end")), '{"error": {"message": "engine hiccup"'),
        (
            "message-not-string",
            on_events(lambda body, events: events[:2] + [{"error": {"message": 5, "type": "server_error"}}, "[DONE]"]),
            '"message": 5',
        ),
    ],
}
