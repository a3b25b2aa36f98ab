"""Is an answer a correct completion? What every suite asks of a known-good request before it judges
anything else.

A status is not an answer: HTTP 200 ``{}``, an echo of the request or an error body under 200 are no
completion. The robustness suite's positive controls and the security suite's (the same request
under a limit, the light load beside a hostile request) read these, so a control means the same
thing in both.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import carries_error
from .sse import SSEStream

CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"
SHOWN = 300  # characters of a wrong answer a message quotes


def _choice_problem(path: str, choice: Any, part: str) -> str | None:
    """Why ``choice`` (choices[0] of an answer, or of a chunk: ``part`` "delta") lacks its route's
    text, or None. A chunk's ``delta.content`` may be absent (a role-only or final chunk), an
    answer's ``message.content`` not."""
    if not isinstance(choice, dict):
        return f"choices[0] is not an object: {choice!r:.{SHOWN}}"
    if path == CHAT:
        message = choice.get(part)
        if not isinstance(message, dict):
            return f"choices[0].{part} is not an object: {message!r:.{SHOWN}}"
        if not isinstance(
            message.get("content"), (str,) if part == "message" else (str, type(None))
        ):
            return f"choices[0].{part}.content is not a string: {message.get('content')!r:.{SHOWN}}"
    elif path == COMPLETIONS and not isinstance(choice.get("text"), str):
        return f"choices[0].text is not a string: {choice.get('text')!r:.{SHOWN}}"
    return None


def completion_problem(path: str, status: int, text: str) -> str | None:
    """Why ``text`` (HTTP ``status``) is not a correct answer to a known-good request at ``path``,
    or None.

    Chat: ``choices[0].message.content`` a string; text completions: ``choices[0].text`` a string;
    other routes: a JSON object without an ``error``."""
    if status != 200:
        return f"HTTP {status}: {text[:SHOWN]}"
    try:
        data = json.loads(text)
    except ValueError:
        return f"HTTP 200 but the body is not JSON: {text[:SHOWN]!r}"
    if not isinstance(data, dict):
        return f"HTTP 200 but the body is not a JSON object: {text[:SHOWN]!r}"
    if carries_error(data):
        return f"HTTP 200 with an error body: {text[:SHOWN]!r}"
    if path not in (CHAT, COMPLETIONS):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return f"HTTP 200 without choices: {text[:SHOWN]!r}"
    why = _choice_problem(path, choices[0], "message")
    return f"HTTP 200 but {why}" if why else None


def stream_problem(path: str, stream: SSEStream) -> str | None:
    """Why ``stream`` is not a correct streamed answer to a known-good request at ``path``, or None:
    framed SSE ending in ``[DONE]``, chunks whose choices carry text (chat: ``delta``, its
    ``content`` a string in one chunk at least; text completions: ``text``)."""
    if stream.status != 200:
        return f"HTTP {stream.status}: {stream.raw[:SHOWN]}"
    if stream.problems:
        return "HTTP 200 but the stream is broken: " + "; ".join(stream.problems[:3])
    chosen = [
        c["choices"][0]
        for c in stream.chunks
        if isinstance(c.get("choices"), list) and c["choices"]
    ]
    if not chosen:
        return f"HTTP 200 but no chunk carries a choice: {stream.raw[:SHOWN]!r}"
    if (
        why := next(
            filter(None, (_choice_problem(path, choice, "delta") for choice in chosen)), None
        )
    ) is not None:
        return f"HTTP 200 but a chunk's {why}"
    if path == CHAT and not any(
        isinstance(choice["delta"].get("content"), str) for choice in chosen
    ):
        return f"HTTP 200 but no chunk carries delta.content: {stream.raw[:SHOWN]!r}"
    return None


def error_message(text: str) -> str:
    """What an error answer says: its ``error.message`` where it has one, else the start of its
    body.
    """
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        error = None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else text[:SHOWN]
