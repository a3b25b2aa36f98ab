"""Fake-server deviations for the structured suite's own tests: each makes one outcome class happen.

The fake server answers a json_schema request with ``{"answer": ...}`` whatever
the schema says; these hooks replace that answer (non-streamed and streamed
alike) with what a test wants: a value that obeys the schema, broken JSON, a
cut-off document, an HTTP error, or a hang.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from pytest_infer.testing.fakeserver import Deviation, error_body

__all__ = [
    "Deviation",
    "alternating",
    "answering",
    "constant",
    "correct",
    "hang",
    "logging_on",
    "obey",
    "schema_of",
    "status",
]


def schema_of(body: dict) -> Any | None:
    """The schema a request carries (response_format), or None for an ordinary request."""
    rf = body.get("response_format") or {}
    return (rf.get("json_schema") or {}).get("schema") if rf.get("type") == "json_schema" else None


def obey(schema: Any) -> str:
    """A value of the schemas drawn with ``--structured-keywords=enum,const``: enum, const, or {} (anything)."""
    if isinstance(schema, dict) and "enum" in schema:
        return json.dumps(schema["enum"][0])
    if isinstance(schema, dict) and "const" in schema:
        return json.dumps(schema["const"])
    return "0"


def answering(make: Callable[[Any], tuple[str, str]]) -> Deviation:
    """Answer every structured request with ``make(schema) -> (content, finish_reason)``, streamed or not."""

    def response(path: str, body: dict, response: dict) -> dict:
        if (schema := schema_of(body)) is not None:
            content, finish = make(schema)
            response["choices"][0]["message"]["content"] = content
            response["choices"][0]["finish_reason"] = finish
        return response

    def events(path: str, body: dict, events: list) -> list:
        if (schema := schema_of(body)) is None:
            return events
        content, finish = make(schema)
        first = events[0]
        base = {k: v for k, v in first.items() if k != "choices"}
        out = [first]
        out += [
            {**base, "choices": [{"index": 0, "delta": {"content": ch}, "finish_reason": None}]}
            for ch in content
        ]
        out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        return [*out, "[DONE]"]

    return Deviation(response=response, events=events)


def correct() -> Deviation:
    return answering(lambda schema: (obey(schema), "stop"))


def constant(content: str, finish: str = "stop") -> Deviation:
    return answering(lambda schema: (content, finish))


def status(code: int) -> Deviation:
    def request(path: str, body: dict):
        if schema_of(body) is not None:
            return code, error_body(
                f"simulated HTTP {code}", "invalid_request_error" if code < 500 else "server_error"
            )
        return None

    return Deviation(request=request)


def hang(seconds: float) -> Deviation:
    def request(path: str, body: dict):
        if schema_of(body) is not None:
            time.sleep(seconds)
        return None

    return Deviation(request=request)


def alternating() -> Deviation:
    """Right and wrong by turns, whatever the seed: a non-deterministic server."""
    turn = itertools.count()
    return answering(lambda schema: (obey(schema) if next(turn) % 2 else '"zzz"', "stop"))


def uses_keyword(schema: Any, keyword: str) -> bool:
    """Does ``keyword`` appear as a key anywhere in the schema?"""
    if isinstance(schema, dict):
        return keyword in schema or any(uses_keyword(v, keyword) for v in schema.values())
    if isinstance(schema, list):
        return any(uses_keyword(v, keyword) for v in schema)
    return False


def logging_on(
    keyword: str, warning: str, bad: str, good: str, log: Callable[[str], None] | None = None
) -> Deviation:
    """Like vLLM's xgrammar converter: a schema using ``keyword`` makes the server log ``warning`` and
    answer ``bad`` (breaking the constraint it ignores); any other schema logs an INFO line naming it
    and gets ``good``; a plain chat request logs an INFO line of its own.

    Logging is a flushed print to stdout (a launched server's log) unless ``log`` is given.
    """
    write = log or (lambda line: print(line, flush=True))

    def request(path: str, body: dict):
        if path == "/v1/chat/completions":
            schema = schema_of(body)
            if schema is None:
                write("INFO plain chat request")
            elif uses_keyword(schema, keyword):
                write(warning)
            else:
                write(f"INFO compiled a grammar for {json.dumps(schema)}")
        return None

    answers = answering(lambda schema: (bad if uses_keyword(schema, keyword) else good, "stop"))
    return Deviation(request=request, response=answers.response, events=answers.events)
