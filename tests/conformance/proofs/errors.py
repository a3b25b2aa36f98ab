"""How each check in `pytest_infer/conformance/checks/errors.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

from collections.abc import Callable

from pytest_infer.outcomes import Inconclusive
from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation, error_body

from ..deviations import CHAT, answer_when, bad_temperature, canned_chat
from . import SKIPPED, Proof


def no_messages(p: str, body: dict) -> bool:
    return p == CHAT and "messages" not in body


def long_prompt(p: str, body: dict) -> bool:
    return (
        p == CHAT
        and sum(
            len(str(m.get("content") or ""))
            for m in body.get("messages") or []
            if isinstance(m, dict)
        )
        > CONTEXT_LENGTH
    )


FLAT_ERROR = {"error": "messages is required"}


INT_CODE = {
    "error": {
        "message": "messages is required",
        "type": "BadRequestError",
        "param": "messages",
        "code": 400,
    }
}


def _bad_input_500(predicate: Callable[[dict], bool]) -> Deviation:
    return answer_when(lambda p, b: p == CHAT and predicate(b), 500, {"detail": "boom"})


FLAT = {"detail": "bad request, flatly"}


def _envelope(**error: object) -> dict:
    return {
        "error": (
            {
                "message": "messages is required",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
            | error
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


# a body that is not JSON reaches only ``Deviation.malformed``: the parser's exception escapes as a
# 500
INVALID_JSON_500 = Deviation(
    malformed=lambda p, raw: (
        (500, error_body("Expecting value: line 1 column 29", "internal_server_error"))
        if p == CHAT
        else None
    )
)


PROOFS: dict[str, Proof] = {
    "errors.bad-input-4xx": Proof(
        mutation=answer_when(
            lambda p, b: p == CHAT and not isinstance(b.get("messages"), list),
            500,
            {"detail": "Internal Server Error"},
        ),
        says="HTTP 500",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (name, _bad_input_500(predicate), 'HTTP 500: {"detail": "boom"}')
            for name, predicate in {
                "temperature out of range": lambda b: b.get("temperature") == 5.0,
                "message without role": lambda b: any(
                    isinstance(m, dict) and "role" not in m for m in b.get("messages") or []
                ),
                "max_tokens negative": lambda b: b.get("max_tokens") == -1,
            }.items()
        ]
        + [
            (
                "invalid-json",
                INVALID_JSON_500,
                'for a request body that is not valid JSON\ngot:      HTTP 500: {"error": '
                '{"message": "Expecting value',
            ),
        ],
    ),
    "errors.bad-input-stream": Proof(
        mutation=answer_when(
            lambda p, b: bad_temperature(p, b) and b.get("stream"), 200, canned_chat()
        ),
        says="HTTP 200",
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (
                "server-error",
                answer_when(_streamed(_too_hot), 500, FLAT),
                'HTTP 500: {"detail": "bad request, flatly"}',
            ),
            (
                "envelope",
                answer_when(_streamed(_too_hot), 400, FLAT),
                '{"detail": "bad request, flatly"}',
            ),
        ],
    ),
    "errors.context-overflow": Proof(
        mutation=answer_when(long_prompt, 500, {"detail": "Internal Server Error"}),
        says="HTTP 500",
        sends={"GET /v1/models": "", "POST /v1/chat/completions": "max_tokens messages model"},
        gives_up={
            "empty-object": SKIPPED,
            "no-route": SKIPPED,
            "not-an-object": SKIPPED,
            "refuses": SKIPPED,
        },
        branches=[
            ("envelope", answer_when(long_prompt, 400, FLAT), '{"detail": "bad request, flatly"}'),
        ],
    ),
    "errors.context-overflow-stream": Proof(
        mutation=answer_when(
            lambda p, b: long_prompt(p, b) and b.get("stream"), 200, canned_chat()
        ),
        says="HTTP 200",
        sends={
            "GET /v1/models": "",
            "POST /v1/chat/completions": "max_tokens messages model stream",
        },
        gives_up={
            "empty-object": SKIPPED,
            "no-route": SKIPPED,
            "not-an-object": SKIPPED,
            "refuses": SKIPPED,
        },
        branches=[
            (
                "server-error",
                answer_when(_streamed(long_prompt), 500, FLAT),
                'HTTP 500: {"detail": "bad request, flatly"}',
            ),
            (
                "envelope",
                answer_when(_streamed(long_prompt), 400, FLAT),
                '{"detail": "bad request, flatly"}',
            ),
        ],
    ),
    "errors.envelope": Proof(
        mutation=answer_when(no_messages, 400, FLAT_ERROR),
        says="the body is not",
        sends={"POST /v1/chat/completions": "max_tokens messages model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (
                "accepted",
                answer_when(no_messages, 200, canned_chat()),
                'HTTP 200: {"id": "chatcmpl-canned"',
            ),
            (
                "empty-message",
                answer_when(no_messages, 400, _envelope(message="")),
                '"message": ""',
            ),
            ("type-not-str", answer_when(no_messages, 400, _envelope(type=400)), '"type": 400'),
        ],
    ),
    "errors.envelope-types": Proof(
        mutation=answer_when(no_messages, 400, INT_CODE),
        says="error.code is 400",
        sends={"POST /v1/chat/completions": "max_tokens messages model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (
                "accepted",
                answer_when(no_messages, 200, canned_chat()),
                'HTTP 200: {"id": "chatcmpl-canned"',
            ),
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
    ),
    "errors.unknown-model": Proof(
        mutation=answer_when(
            lambda p, b: p == CHAT and b.get("model") not in (MODEL, None),
            400,
            error_body("unknown model"),
        ),
        says="HTTP 404",
        sends={"POST /v1/chat/completions": "max_tokens messages model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (
                "envelope",
                answer_when(_unknown_model, 404, FLAT),
                '{"detail": "bad request, flatly"}',
            ),
        ],
    ),
}
