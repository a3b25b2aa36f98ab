"""Further failure branches of the checks in `pytest_infer/conformance/checks/errors.py`, each its own deviation."""

from __future__ import annotations

from collections.abc import Callable

from pytest_infer.testing.fakeserver import MODEL, Deviation, error_body

from ..deviations import CHAT, answer_when, canned_chat, long_prompt, no_messages

FLAT = {"detail": "bad request, flatly"}


def _envelope(**error: object) -> dict:
    return {
        "error": (
            {"message": "messages is required", "type": "invalid_request_error", "param": None, "code": None} | error
        )
    }


def _without(key: str) -> dict:
    body = _envelope()
    del body["error"][key]
    return body


def _streamed(predicate: Callable[[str, dict], bool]) -> Callable[[str, dict], bool]:
    return lambda p, b: predicate(p, b) and bool(b.get("stream"))


def _too_hot(p: str, b: dict) -> bool:
    return p == CHAT and b.get("temperature") == 5.0


def _unknown_model(p: str, b: dict) -> bool:
    return p == CHAT and b.get("model") not in (MODEL, None)


# a body that is not JSON reaches only ``Deviation.malformed``: the parser's exception escapes as a 500
INVALID_JSON_500 = Deviation(
    malformed=lambda p, raw: (
        (500, error_body("Expecting value: line 1 column 29", "internal_server_error")) if p == CHAT else None
    )
)

BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "errors.envelope": [
        ("accepted", answer_when(no_messages, 200, canned_chat()), 'HTTP 200: {"id": "chatcmpl-canned"'),
        ("empty-message", answer_when(no_messages, 400, _envelope(message="")), '"message": ""'),
        ("type-not-str", answer_when(no_messages, 400, _envelope(type=400)), '"type": 400'),
    ],
    "errors.envelope-types": [
        ("accepted", answer_when(no_messages, 200, canned_chat()), 'HTTP 200: {"id": "chatcmpl-canned"'),
        ("flat", answer_when(no_messages, 400, FLAT), '{"detail": "bad request, flatly"}'),
        (
            "param-missing",
            answer_when(no_messages, 400, _without("param")),
            '"type": "invalid_request_error", "code": null}}',
        ),
        ("param-int", answer_when(no_messages, 400, _envelope(param=0)), "error.param is 0"),
        (
            "both",
            answer_when(no_messages, 400, _envelope(param=["messages"], code=400)),
            'error.param is ["messages"], not a string or null; error.code is 400',
        ),
    ],
    "errors.bad-input-4xx": [
        (
            "invalid-json",
            INVALID_JSON_500,
            'for a request body that is not valid JSON\ngot:      HTTP 500: {"error": {"message": "Expecting value',
        ),
    ],
    "errors.unknown-model": [
        ("envelope", answer_when(_unknown_model, 404, FLAT), '{"detail": "bad request, flatly"}'),
    ],
    "errors.context-overflow": [
        ("envelope", answer_when(long_prompt, 400, FLAT), '{"detail": "bad request, flatly"}'),
    ],
    "errors.context-overflow-stream": [
        ("server-error", answer_when(_streamed(long_prompt), 500, FLAT), 'HTTP 500: {"detail": "bad request, flatly"}'),
        ("envelope", answer_when(_streamed(long_prompt), 400, FLAT), '{"detail": "bad request, flatly"}'),
    ],
    "errors.bad-input-stream": [
        ("server-error", answer_when(_streamed(_too_hot), 500, FLAT), 'HTTP 500: {"detail": "bad request, flatly"}'),
        ("envelope", answer_when(_streamed(_too_hot), 400, FLAT), '{"detail": "bad request, flatly"}'),
    ],
}
