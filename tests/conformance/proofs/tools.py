"""How each check in `pytest_infer/conformance/checks/tools.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import NotExercised, Unsupported
from pytest_infer.testing.fakeserver import Deviation, error_body

from ..deviations import (
    CHAT,
    _choice,
    _first_arguments_cut,
    _fragments,
    _tool_fragment_without_id,
    answer_when,
    chain,
    on_events,
    on_response,
)
from . import Proof


def _empty_required(p: str, body: dict, resp: dict) -> None:
    if body.get("tool_choice") == "required":
        _choice(resp)["message"]["tool_calls"] = []


def _wrong_named(p: str, body: dict, resp: dict) -> None:
    if isinstance(body.get("tool_choice"), dict):
        _choice(resp)["message"]["tool_calls"][0]["function"]["name"] = "get_weather"


def _call_despite_none(p: str, body: dict, resp: dict) -> None:
    if body.get("tool_choice") == "none" and body.get("tools"):
        _choice(resp)["message"]["tool_calls"] = [
            {
                "id": "call_x",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }
        ]
        _choice(resp)["finish_reason"] = "tool_calls"


def _auto_never_calls(p: str, body: dict, resp: dict) -> None:
    if body.get("tools") and body.get("tool_choice", "auto") == "auto":
        _choice(resp)["message"] = {"role": "assistant", "content": "I cannot."}
        _choice(resp)["finish_reason"] = "stop"


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


def _forced(change: Callable[[dict], None], *, seed: int | None = None) -> Deviation:
    """``change`` on the choice of a non-streamed forced call (tool_choice 'required', one call),
    optionally for one seed only."""

    def response(p: str, body: dict, resp: dict) -> None:
        if (
            body.get("tool_choice") == "required"
            and not body.get("parallel_tool_calls")
            and seed in (None, body.get("seed"))
        ):
            change(_choice(resp))

    return on_response(response)


def _call(**changes: Any) -> Callable[[dict], None]:
    return lambda choice: choice["message"]["tool_calls"][0].update(changes)


def _function(**changes: Any) -> Callable[[dict], None]:
    return lambda choice: choice["message"]["tool_calls"][0]["function"].update(changes)


def _both(*changes: Callable[[dict], None]) -> Callable[[dict], None]:
    return lambda choice: [change(choice) for change in changes] and None


def _when_tools(change: Callable[[dict, dict], None]) -> Deviation:
    """``change(body, choice)`` on a non-streamed answer to a request with tools."""
    return on_response(lambda p, b, r: change(b, _choice(r)) if b.get("tools") else None)


def _none(change: Callable[[dict], None]) -> Deviation:
    """``change(choice)`` on the answer to tool_choice 'none'."""
    return _when_tools(lambda b, c: change(c) if b.get("tool_choice") == "none" else None)


def _streamed(change: Callable[[list[dict]], None], *, seed: int | None = None) -> Deviation:
    """``change(fragments)`` on the call fragments of a streamed forced call (one call), optionally
    for one seed only."""

    def events_(body: dict, events: list) -> list:
        if (
            body.get("tool_choice") != "required"
            or body.get("parallel_tool_calls")
            or seed not in (None, body.get("seed"))
        ):
            return events
        events = copy.deepcopy(events)
        change(_fragments(events))
        return events

    return on_events(events_)


def _finished(
    reason: str, *, seed: int | None = None, drop_calls: bool = False
) -> Callable[[dict, list], list]:
    """A stream's finish_reason made ``reason`` (for one seed, or all), its call fragments dropped
    if told."""

    def events_(body: dict, events: list) -> list:
        if seed not in (None, body.get("seed")) or not body.get("tools"):
            return events
        out = []
        for e in copy.deepcopy(events):
            if isinstance(e, dict) and e.get("choices"):
                delta = e["choices"][0].get("delta") or {}
                if drop_calls and delta.get("tool_calls"):
                    continue
                if e["choices"][0].get("finish_reason"):
                    e["choices"][0]["finish_reason"] = reason
            out.append(e)
        return out

    return events_


def _rename_first(name: str) -> Callable[[list[dict]], None]:
    return lambda frags: frags[0]["function"].update(name=name)


def _parallel_shifted(body: dict, events: list) -> list:
    events = copy.deepcopy(events)
    for frag in _fragments(events):
        frag["index"] += 1
    return events


def _parallel_same_id_and_type_tool(p: str, body: dict, resp: dict) -> None:
    """Non-streamed parallel calls that share one id and are typed 'tool': several problems at
    once."""
    if body.get("parallel_tool_calls"):
        for call in _choice(resp)["message"]["tool_calls"]:
            call.update(id="call_1", type="tool")


def _parallel_first_renamed_and_cut(body: dict, events: list) -> list:
    """Streamed parallel calls whose call 0 names an unknown tool and has arguments that never
    close: two problems at once."""
    events = _first_arguments_cut(body, copy.deepcopy(events))
    _fragments(events)[0]["function"].update(name="get_tomorrow")
    return events


PROOFS: dict[str, Proof] = {
    "tools.auto": Proof(
        mutation=on_response(_auto_never_calls),
        says="get_weather call",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice "
            "tools"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "finish-reason",
                _when_tools(
                    lambda b, c: (
                        c.update(finish_reason="stop")
                        if b.get("tool_choice", "auto") == "auto"
                        else None
                    )
                ),
                '"finish_reason": "stop"',
            ),
            (
                "default-only",
                _when_tools(
                    lambda b, c: (
                        c.update(
                            message={"role": "assistant", "content": "I cannot."},
                            finish_reason="stop",
                        )
                        if "tool_choice" not in b
                        else None
                    )
                ),
                "I cannot.",
            ),
            (
                "other-tool",
                _when_tools(
                    lambda b, c: (
                        c["message"]["tool_calls"][0]["function"].update(name="get_time")
                        if b.get("tool_choice", "auto") == "auto"
                        else None
                    )
                ),
                "names 'get_time'",
            ),
            (
                "two-problems",
                _when_tools(
                    lambda b, c: (
                        _function(name="get_time", arguments="{x")(c)
                        if b.get("tool_choice", "auto") == "auto"
                        else None
                    )
                ),
                "('get_weather',); call 0 arguments '{x'",
            ),
        ],
    ),
    "tools.named": Proof(
        mutation=on_response(_wrong_named),
        says="not one of ('get_time',)",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice "
            "tools"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "two-problems",
                _when_tools(
                    lambda b, c: (
                        _function(name="get_weather", arguments="{x")(c)
                        if isinstance(b.get("tool_choice"), dict)
                        else None
                    )
                ),
                "'{x'",
            ),
        ],
    ),
    "tools.none": Proof(
        mutation=on_response(_call_despite_none),
        says="no tool_calls",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice "
            "tools"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "call-alone",
                _none(
                    lambda c: c["message"].update(
                        tool_calls=[
                            {
                                "id": "call_none",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": "{}"},
                            }
                        ]
                    )
                ),
                "call_none",
            ),
            (
                "finish-tool_calls",
                _none(
                    lambda c: c.update(
                        finish_reason="tool_calls",
                        message={"role": "assistant", "content": "No call here."},
                    )
                ),
                "No call here.",
            ),
            ("content-null", _none(lambda c: c["message"].update(content=None)), '"content": null'),
        ],
    ),
    "tools.parallel": Proof(
        mutation=on_events(_one_index),
        says="call 0 changed id",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model parallel_tool_calls seed "
            "stream temperature "
            "tool_choice tools"
        },
        gives_up={"empty-object": NotExercised, "no-route": Unsupported, "refuses": Unsupported},
        branches=[
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
            ("indices", on_events(_parallel_shifted), "[1, 2]"),
            (
                "two-problems",
                on_response(_parallel_same_id_and_type_tool),
                "call 0 type is 'tool'; call 1 type is 'tool'; duplicate call ids",
            ),
            (
                "stream-error",
                answer_when(
                    lambda p, b: p == CHAT and b.get("stream") and b.get("parallel_tool_calls"),
                    500,
                    error_body("boom", "server_error"),
                ),
                "HTTP 200 for streamed parallel calls",
            ),
            (
                "two-problems-joined",
                on_events(_parallel_first_renamed_and_cut),
                "('get_weather', 'get_time'); call 0 arguments '{\"x\"'",
            ),
        ],
    ),
    "tools.required": Proof(
        mutation=on_response(_empty_required),
        says="tool_calls is []",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice "
            "tools"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "not-a-list",
                _forced(lambda c: c["message"].update(tool_calls={"id": "call_obj"})),
                "{'id': 'call_obj'}",
            ),
            (
                "call-not-object",
                _forced(lambda c: c["message"].update(tool_calls=["get_weather"])),
                "type is 'get_weather'",
            ),
            ("no-id", _forced(_call(id="")), '"id": ""'),
            ("id-not-string", _forced(_call(id=7)), '"id": 7'),
            ("type", _forced(_call(type="tool")), "type is 'tool'"),
            # crashed the check (TypeError: unhashable type) before the fix
            ("id-a-list", _forced(_call(id=["call_1"])), '"id": ["call_1"]'),
            (
                "function-not-object",
                _forced(_call(function="get_weather")),
                "function is 'get_weather'",
            ),
            ("unknown-name", _forced(_function(name="get_tomorrow")), "names 'get_tomorrow'"),
            (
                "arguments-not-string",
                _forced(_function(arguments={"x": 1})),
                '"arguments": {"x": 1}',
            ),
            ("arguments-not-json", _forced(_function(arguments="{x")), "'{x'"),
            ("two-problems", _forced(_both(_call(type="tool"), _function(arguments="{x"))), "'{x'"),
            ("finish-reason", _forced(lambda c: c.update(finish_reason="eos_token")), "eos_token"),
            # get_time is one of the offered tools: only the finish_reason is wrong
            (
                "get_time-and-finish-reason",
                _forced(
                    _both(_function(name="get_time"), lambda c: c.update(finish_reason="eos_token"))
                ),
                "got:      eos_token",
            ),
            (
                "cut-text",
                _forced(
                    lambda c: c.update(
                        message={"role": "assistant", "content": "Sure, the wea"},
                        finish_reason="length",
                    )
                ),
                "Sure, the wea",
            ),
            (
                "after-length",
                chain(
                    _forced(lambda c: c.update(finish_reason="length"), seed=1234),
                    _forced(_call(type="tool_x"), seed=1235),
                ),
                "type is 'tool_x'",
            ),
        ],
    ),
    "tools.result-message": Proof(
        mutation=answer_when(
            lambda p, b: (
                p == CHAT
                and any(
                    isinstance(m, dict) and m.get("role") == "tool" for m in b.get("messages") or []
                )
            ),
            400,
            error_body("role 'tool' is not supported", param="messages"),
        ),
        says="HTTP 200 for a conversation with a tool result",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model temperature tool_choice tools"
        },
        branches=[
            (
                "content-null",
                on_response(
                    lambda p, b, r: (
                        _choice(r)["message"].update(content=None)
                        if any(m.get("role") == "tool" for m in b.get("messages") or [])
                        else None
                    )
                ),
                '"content": null',
            ),
        ],
    ),
    "tools.stream-fragments": Proof(
        mutation=on_events(_tool_fragment_without_id),
        says="has no id",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model seed stream temperature "
            "tool_choice tools"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "not-an-object",
                _streamed(lambda frags: frags[1].update(function="get_weather")),
                "'function': 'get_weather'",
            ),
            (
                "index-not-int",
                _streamed(lambda frags: [f.update(index="0") for f in frags]),
                "'index': '0'",
            ),
            (
                "changed-id",
                _streamed(lambda frags: frags[1].update(id="call_other")),
                "to call_other",
            ),
            (
                "two-problems",
                _streamed(lambda frags: (frags[0].pop("id"), frags[2].update(id="call_late"))),
                "to call_late",
            ),
            ("unknown-name", _streamed(_rename_first("get_tomorrow")), "names 'get_tomorrow'"),
            ("type", _streamed(lambda frags: frags[0].update(type="tool")), "type is 'tool'"),
            # crashed the check (TypeError: can only concatenate str) before the fix
            (
                "arguments-object",
                _streamed(lambda frags: frags[1]["function"].update(arguments={"x": 1})),
                "{'arguments': {'x': 1}}",
            ),
            ("arguments", on_events(_first_arguments_cut), "'{\"x\"'"),
            # get_time is one of the offered tools: only the arguments are wrong
            (
                "get_time-and-arguments",
                chain(_streamed(_rename_first("get_time")), on_events(_first_arguments_cut)),
                "got:      call 0 arguments '{\"x\"'",
            ),
            (
                "after-length",
                chain(
                    on_events(_finished("length", seed=1234)),
                    _streamed(_rename_first("get_tomorrow"), seed=1235),
                ),
                "names 'get_tomorrow'",
            ),
            (
                "length-without-fragments",
                on_events(_finished("length", drop_calls=True)),
                "tool_calls is []",
            ),
            (
                "two-problems-joined",
                chain(_streamed(_rename_first("get_tomorrow")), on_events(_first_arguments_cut)),
                "('get_weather', 'get_time'); call 0 arguments '{\"x\"'",
            ),
        ],
    ),
}
