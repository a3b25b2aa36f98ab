"""How each check in `pytest_infer/conformance/checks/messages.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.testing.fakeserver import MODEL, Deviation, error_body

from ..deviations import (
    MESSAGES,
    _misnamed_event,
    _set,
    _typed,
    _without,
    answer_when,
    on_events,
    on_response,
)
from . import Proof, model_proof


def _stop_fired(p: str, b: dict, r: dict) -> bool:
    return bool(b.get("stop_sequences")) and r.get("stop_reason") == "stop_sequence"


ANTHROPIC_MESSAGE = {
    "id": "msg-canned",
    "type": "message",
    "role": "assistant",
    "model": MODEL,
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}


def messages_accept(predicate: Callable[[dict], bool]) -> Deviation:
    """/v1/messages answers a message to the requests ``predicate`` picks (those the reference
    refuses)."""
    return answer_when(lambda p, b: p == MESSAGES and predicate(b), 200, ANTHROPIC_MESSAGE)


def _above(name: str, limit: float) -> Callable[[dict], bool]:
    return lambda b: isinstance(b.get(name), (int, float)) and b[name] > limit


def _role(role: str) -> Callable[[dict], bool]:
    return lambda b: any(
        isinstance(m, dict) and m.get("role") == role for m in b.get("messages") or []
    )


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


OPENAI_ENVELOPE = error_body("Field required", param="model")


def _message(change: Any, when: Any = None) -> Deviation:
    """``change(body, message)`` on each POST /v1/messages answer (``when(body)`` says which)."""
    return on_response(
        lambda p, b, r: change(b, r) if when is None or when(b) else None, path=MESSAGES
    )


def _fields(**changes: Any) -> Deviation:
    return _message(lambda b, r: r.update(changes))


def _usage(**changes: Any) -> Deviation:
    return _message(lambda b, r: r["usage"].update(changes))


def _events(change: Any) -> Deviation:
    return on_events(
        lambda b, events: change([e for e in events if e.get("type") != "ping"]), path=MESSAGES
    )


def _at(kinds: list[str], kind: str) -> int:
    return kinds.index(kind)


def _insert_before(kind: str, event: dict) -> Any:
    """``event`` sent once more, just before the first ``kind`` event."""

    def change(events: list) -> list:
        i = _at([e["type"] for e in events], kind)
        return events[:i] + [event] + events[i:]

    return change


def _with_type(kind: str, **changes: Any) -> Any:
    return lambda events: [{**e, **changes} if e["type"] == kind else e for e in events]


def _short_free_text(b: dict, r: dict) -> None:
    r["content"][0]["text"] = "Ok!   "


def _split_leaking(b: dict, r: dict) -> None:
    """The stopped text in two text blocks, the second ending with the stop sequence."""
    text = r["content"][0]["text"]
    r["content"] = [
        {"type": "text", "text": text[:2]},
        {"type": "text", "text": text[2:] + b["stop_sequences"][0]},
    ]


def _bad_request(p: str, b: dict) -> bool:
    return p == MESSAGES and "max_tokens" not in b


def _anthropic_error(**error: Any) -> dict:
    return {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "max_tokens: Field required",
            **error,
        },
    }


PROOFS: dict[str, Proof] = {
    "messages.count-tokens": Proof(
        mutation=on_response(
            lambda p, b, r: _set(r, input_tokens=r["input_tokens"] - 3),
            path=MESSAGES + "/count_tokens",
        ),
        says="got:      48",
        sends={
            "POST /v1/messages": "max_tokens messages model temperature",
            "POST /v1/messages/count_tokens": "messages model",
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "float",
                on_response(
                    lambda p, b, r: r.update(input_tokens=float(r["input_tokens"])),
                    path=MESSAGES + "/count_tokens",
                ),
                "got:      51.0",
            ),
            ("usage-not-object", _fields(usage="51"), "got:      51\n"),  # crashed the check,
        ],
    ),
    "messages.create": Proof(
        mutation=on_response(lambda p, b, r: r.pop("stop_sequence"), path=MESSAGES),
        says="stop_sequence is 'missing'",
        sends={"POST /v1/messages": "max_tokens messages model temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "type",
                on_response(lambda p, b, r: _set(r, type="msg"), path=MESSAGES),
                "type is 'msg'",
            ),
            (
                "role",
                on_response(lambda p, b, r: _set(r, role="model"), path=MESSAGES),
                "role is 'model'",
            ),
            ("id", on_response(lambda p, b, r: _set(r, id=None), path=MESSAGES), "id is None"),
            (
                "stop-reason",
                on_response(lambda p, b, r: _set(r, stop_reason="length"), path=MESSAGES),
                "stop_reason is 'length'",
            ),
            (
                "content",
                on_response(
                    lambda p, b, r: _set(r, content=[{"type": "output_text", "text": "x"}]),
                    path=MESSAGES,
                ),
                "content has no text block",
            ),
            (
                "usage",
                on_response(lambda p, b, r: r["usage"].update(output_tokens=0), path=MESSAGES),
                "'output_tokens': 0",
            ),
            ("id-empty", _fields(id=""), "id is ''"),
            ("content-not-blocks", _fields(content=["Sure."]), "['Sure.']"),
            ("text-not-string", _fields(content=[{"type": "text", "text": 7}]), "'text': 7"),
            ("stop-sequence-set", _fields(stop_sequence="END"), "stop_sequence is 'END'"),
            ("input-tokens", _usage(input_tokens=-1), "'input_tokens': -1"),
            ("output-tokens-bool", _usage(output_tokens=True), "'output_tokens': True"),
            ("output-over-limit", _usage(output_tokens=9), "'output_tokens': 9"),
            ("usage-not-object", _fields(usage="8"), "usage is '8'"),  # crashed the check
            # usage at its low edges is valid (all input read from the cache, one token out): only
            # the stop_reason is wrong
            (
                "usage-low-edges",
                _fields(usage={"input_tokens": 0, "output_tokens": 1}, stop_reason="length"),
                "stop_reason is 'length'\n",
            ),
            ("two-problems", _fields(type="msg", role="model"), "type is 'msg'; role is 'model'"),
        ],
    ),
    "messages.errors": Proof(
        mutation=answer_when(
            lambda p, b: p == MESSAGES and "max_tokens" not in b,
            400,
            error_body("max_tokens is required", param="max_tokens"),
        ),
        says='the body is not {"type": "error"',
        sends={"POST /v1/messages": "max_tokens messages model temperature"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            (
                "accepted",
                answer_when(
                    lambda p, b: p == MESSAGES and "max_tokens" not in b, 200, {"type": "message"}
                ),
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
            (
                "body-not-object",
                answer_when(_bad_request, 400, "max_tokens: Field required"),
                '"max_tokens: Field required"',
            ),
            (
                "error-not-object",
                answer_when(
                    _bad_request, 400, {"type": "error", "error": "max_tokens: Field required"}
                ),
                '"error": "max_tokens: Field required"',
            ),
            (
                "error-type",
                answer_when(_bad_request, 400, _anthropic_error(type=None)),
                '"type": null',
            ),
            (
                "message-not-string",
                answer_when(_bad_request, 400, _anthropic_error(message=["max_tokens"])),
                '"message": ["max_tokens"]',
            ),
        ],
    ),
    "messages.model": model_proof(
        "/v1/messages",
        "max_tokens messages model stream temperature",
        streamed="'another-model' in 1 of ",
    ),
    "messages.parameter-ranges": Proof(
        mutation=messages_accept(_above("temperature", 1)),  # OpenAI's range, 0 to 2
        says="expected: HTTP 400 for temperature=1.5\ngot:      HTTP 200: ",
        sends={"POST /v1/messages": "max_tokens messages model temperature top_k top_p"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            ("top_p", messages_accept(_above("top_p", 1)), "HTTP 400 for top_p=1.5"),
            (
                "top_k",
                messages_accept(lambda b: (b.get("top_k") or 0) < 0),
                "HTTP 400 for top_k=-1",
            ),
            (
                "max_tokens",
                messages_accept(lambda b: b.get("max_tokens", 0) < 0),
                "HTTP 400 for max_tokens=-1",
            ),
            (
                "status-422",
                _messages_errors_as(
                    422,
                    {"type": "error", "error": {"type": "invalid_request_error", "message": "m"}},
                ),
                "got:      HTTP 422: ",
            ),
            (
                "openai-envelope",
                _messages_errors_as(400, OPENAI_ENVELOPE),
                'the body is not {"type": "error"',
            ),
            (
                "error-type",
                _messages_errors_as(
                    400, {"type": "error", "error": {"type": "api_error", "message": "m"}}
                ),
                "error.type is 'api_error', not 'invalid_request_error'",
            ),
        ],
    ),
    "messages.required-fields": Proof(
        mutation=messages_accept(lambda b: "model" not in b),  # the served model filled in
        says="expected: HTTP 400 for no model\ngot:      HTTP 200: ",
        sends={"POST /v1/messages": "max_tokens messages model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            (
                "messages",
                messages_accept(lambda b: "messages" not in b),
                "HTTP 400 for no messages",
            ),
            (
                "openai-envelope",
                _messages_errors_as(400, OPENAI_ENVELOPE),
                'the body is not {"type": "error"',
            ),
        ],
    ),
    "messages.roles": Proof(
        mutation=messages_accept(_role("developer")),
        says="expected: HTTP 400 for a 'developer' message\ngot:      HTTP 200: ",
        sends={"POST /v1/messages": "max_tokens messages model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            ("tool", messages_accept(_role("tool")), "HTTP 400 for a 'tool' message"),
        ],
    ),
    "messages.stop-sequence": Proof(
        mutation=on_response(
            lambda p, b, r: _set(r, stop_sequence=None) if _stop_fired(p, b, r) else None,
            path=MESSAGES,
        ),
        says='"stop_sequence": null',
        sends={"POST /v1/messages": "max_tokens messages model stop_sequences temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "reason",
                on_response(
                    lambda p, b, r: (
                        _set(r, stop_reason="end_turn") if _stop_fired(p, b, r) else None
                    ),
                    path=MESSAGES,
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
            (
                "text-blocks",
                _message(_split_leaking, lambda b: b.get("stop_sequences")),
                '"text": "mxqr"',
            ),
            (
                "short-text",
                _message(_short_free_text, lambda b: not b.get("stop_sequences")),
                "got:      Ok!   ",
            ),
        ],
    ),
    "messages.stream-events": Proof(
        mutation=on_events(_without("message_delta"), path=MESSAGES),
        says="content_block_stop -> message_stop",
        sends={"POST /v1/messages": "max_tokens messages model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "start",
                on_events(_without("message_start"), path=MESSAGES),
                "got:      content_block_start",
            ),
            (
                "stray-delta",
                on_events(
                    lambda b, events: [
                        {**e, "index": 1} if _typed("content_block_delta")(e) else e for e in events
                    ],
                    path=MESSAGES,
                ),
                '"stray deltas": [1',
            ),
            (
                "lost-delta",
                on_events(_without("content_block_delta", first_only=True), path=MESSAGES),
                "'text': '",
            ),
            ("event-name", on_events(_misnamed_event, path=MESSAGES), "event: wrong"),
            (
                "no-stop",
                _events(lambda events: events[:-1]),
                "content_block_stop -> message_delta\n",
            ),
            (
                "delta-twice",
                _events(lambda events: events[:-1] + events[-2:]),
                "message_delta -> message_delta -> message_stop",
            ),
            (
                "unknown-type",
                _events(
                    _insert_before(
                        "content_block_stop", {"type": "content_block_pause", "index": 0}
                    )
                ),
                "content_block_pause",
            ),
            (
                "start-again",
                _events(lambda events: events[:1] + events[:1] + events[1:]),
                "message_start -> message_start -> content_block_start",
            ),
            (
                "stop-early",
                _events(_insert_before("message_delta", {"type": "message_stop"})),
                "content_block_stop -> message_stop -> message_delta",
            ),
            ("unclosed", _events(_with_type("content_block_stop", index=1)), '"stopped": ["1"]'),
            (
                "stop-reason",
                _events(
                    _with_type(
                        "message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}
                    )
                ),
                '"stop_reason": "end_turn"',
            ),
            (
                "output-tokens",
                _events(_with_type("message_delta", usage={"output_tokens": 99})),
                '"output_tokens": 99',
            ),
            (
                "delta-not-object",
                _events(_with_type("message_delta", delta="end_turn", usage=8)),
                '"stop_reason": null, "output_tokens": null',
            ),  # crashed the check,
        ],
    ),
}
