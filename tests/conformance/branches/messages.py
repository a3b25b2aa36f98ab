"""Further failure branches of the checks in `pytest_infer/conformance/checks/messages.py`, each its own deviation."""

from __future__ import annotations

from typing import Any

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import MESSAGES, answer_when, on_events, on_response


def _message(change: Any, when: Any = None) -> Deviation:
    """``change(body, message)`` on each POST /v1/messages answer (``when(body)`` says which)."""
    return on_response(lambda p, b, r: change(b, r) if when is None or when(b) else None, path=MESSAGES)


def _fields(**changes: Any) -> Deviation:
    return _message(lambda b, r: r.update(changes))


def _usage(**changes: Any) -> Deviation:
    return _message(lambda b, r: r["usage"].update(changes))


def _events(change: Any) -> Deviation:
    return on_events(lambda b, events: change([e for e in events if e.get("type") != "ping"]), path=MESSAGES)


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
    r["content"] = [{"type": "text", "text": text[:2]}, {"type": "text", "text": text[2:] + b["stop_sequences"][0]}]


def _bad_request(p: str, b: dict) -> bool:
    return p == MESSAGES and "max_tokens" not in b


def _anthropic_error(**error: Any) -> dict:
    return {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required", **error},
    }


BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "messages.create": [
        ("id-empty", _fields(id=""), "id is ''"),
        ("content-not-blocks", _fields(content=["Sure."]), "['Sure.']"),
        ("text-not-string", _fields(content=[{"type": "text", "text": 7}]), "'text': 7"),
        ("stop-sequence-set", _fields(stop_sequence="END"), "stop_sequence is 'END'"),
        ("input-tokens", _usage(input_tokens=-1), "'input_tokens': -1"),
        ("output-tokens-bool", _usage(output_tokens=True), "'output_tokens': True"),
        ("output-over-limit", _usage(output_tokens=9), "'output_tokens': 9"),
        ("usage-not-object", _fields(usage="8"), "usage is '8'"),  # crashed the check
        # usage at its low edges is valid (all input read from the cache, one token out): only the stop_reason is wrong
        (
            "usage-low-edges",
            _fields(usage={"input_tokens": 0, "output_tokens": 1}, stop_reason="length"),
            "stop_reason is 'length'\n",
        ),
        ("two-problems", _fields(type="msg", role="model"), "type is 'msg'; role is 'model'"),
    ],
    "messages.stop-sequence": [
        ("text-blocks", _message(_split_leaking, lambda b: b.get("stop_sequences")), '"text": "mxqr"'),
        ("short-text", _message(_short_free_text, lambda b: not b.get("stop_sequences")), "got:      Ok!   "),
    ],
    "messages.stream-events": [
        ("no-stop", _events(lambda events: events[:-1]), "content_block_stop -> message_delta\n"),
        (
            "delta-twice",
            _events(lambda events: events[:-1] + events[-2:]),
            "message_delta -> message_delta -> message_stop",
        ),
        (
            "unknown-type",
            _events(_insert_before("content_block_stop", {"type": "content_block_pause", "index": 0})),
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
            _events(_with_type("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None})),
            '"stop_reason": "end_turn"',
        ),
        ("output-tokens", _events(_with_type("message_delta", usage={"output_tokens": 99})), '"output_tokens": 99'),
        (
            "delta-not-object",
            _events(_with_type("message_delta", delta="end_turn", usage=8)),
            '"stop_reason": null, "output_tokens": null',
        ),  # crashed the check
    ],
    "messages.count-tokens": [
        (
            "float",
            on_response(
                lambda p, b, r: r.update(input_tokens=float(r["input_tokens"])), path=MESSAGES + "/count_tokens"
            ),
            "got:      51.0",
        ),
        ("usage-not-object", _fields(usage="51"), "got:      51\n"),  # crashed the check
    ],
    "messages.errors": [
        (
            "body-not-object",
            answer_when(_bad_request, 400, "max_tokens: Field required"),
            '"max_tokens: Field required"',
        ),
        (
            "error-not-object",
            answer_when(_bad_request, 400, {"type": "error", "error": "max_tokens: Field required"}),
            '"error": "max_tokens: Field required"',
        ),
        ("error-type", answer_when(_bad_request, 400, _anthropic_error(type=None)), '"type": null'),
        (
            "message-not-string",
            answer_when(_bad_request, 400, _anthropic_error(message=["max_tokens"])),
            '"message": ["max_tokens"]',
        ),
    ],
}
