"""Strict server-sent-events reading on top of httpx-sse, keeping the raw bytes.

httpx-sse decodes events the way a browser does, which is forgiving: a line
without a known field is ignored and an event without its closing blank line is
dropped. A conformance suite must see exactly those faults, so ``read_sse``
taps the text httpx-sse reads, decodes events with httpx-sse, and then checks
the raw lines itself; every fault lands in ``SSEStream.problems`` instead of
being swallowed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

DONE = "[DONE]"
_FIELDS = ("data", "event", "id", "retry")


@dataclass(slots=True)
class SSEEvent:
    """One decoded event, with the time (seconds since the request) it was complete."""

    event: str
    data: str
    id: str
    t: float

    @property
    def is_done(self) -> bool:
        return self.data == DONE


@dataclass(slots=True)
class SSEStream:
    """Everything a streamed response carried: status, headers, raw text, events, and framing
    faults.
    """

    status: int
    headers: dict[str, str]
    raw: str = ""
    events: list[SSEEvent] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == 200

    def json(self) -> Any:
        """The body as JSON, for a response that was not a stream (an error before the stream)."""
        return json.loads(self.raw)


class _Tap:
    """What ``EventSource`` reads from: the response's text, recorded on the way through."""

    def __init__(self, response: httpx.Response, sink: list[str]) -> None:
        self.headers = {"content-type": "text/event-stream"}  # the real one is checked by read_sse
        self._response = response
        self._sink = sink

    def iter_text(self) -> Iterator[str]:
        for text in self._response.iter_text():
            self._sink.append(text)
            yield text


def read_sse(
    response: httpx.Response, started: float | None = None, *, terminated: bool = True
) -> SSEStream:
    """Read a streamed ``httpx.Response`` to its end (open it with ``client.stream``).

    ``terminated``: the stream must end with ``data: [DONE]`` (Chat Completions);
    the Responses and Anthropic Messages streams end with a typed event instead.
    """
    started = time.monotonic() if started is None else started
    stream = SSEStream(status=response.status_code, headers=dict(response.headers))
    if response.status_code != 200:
        stream.raw = response.read().decode("utf-8", "replace")
        return stream
    content_type = response.headers.get("content-type", "").partition(";")[0].strip()
    if content_type != "text/event-stream":
        stream.problems.append(f"Content-Type is {content_type!r}, not 'text/event-stream'")
    sink: list[str] = []
    try:
        for sse in EventSource(_Tap(response, sink)).iter_sse():  # type: ignore[arg-type]
            stream.events.append(_event(sse, time.monotonic() - started))
    except httpx.HTTPError as exc:
        stream.problems.append(f"the stream broke off: {type(exc).__name__}: {exc}")
    stream.raw = "".join(sink)
    stream.problems += framing_problems(stream.raw)
    _parse_chunks(stream, terminated)
    return stream


def _event(sse: ServerSentEvent, t: float) -> SSEEvent:
    return SSEEvent(event=sse.event, data=sse.data, id=sse.id, t=round(t, 6))


def framing_problems(raw: str) -> list[str]:
    """Faults in the wire format that a forgiving decoder would hide."""
    problems: list[str] = []
    lines = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, 1):
        if not line or line.startswith(":"):
            continue
        name, colon, _ = line.partition(":")
        if not colon or name not in _FIELDS:
            problems.append(
                f"line {number} is not an SSE field (expected 'data: ...'): {line[:120]!r}"
            )
    if raw and not raw.endswith(("\n\n", "\r\n\r\n", "\r\r")):
        problems.append(
            f"the stream ends inside an event (no blank line after the last one): ...{raw[-80:]!r}"
        )
    if not raw:
        problems.append("the stream is empty")
    return problems


def _parse_chunks(stream: SSEStream, terminated: bool) -> None:
    for i, event in enumerate(stream.events):
        if stream.done:
            stream.problems.append(f"event {i} comes after 'data: [DONE]': {event.data[:120]!r}")
            continue
        if event.is_done:
            stream.done = True
            continue
        try:
            chunk = json.loads(event.data)
        except json.JSONDecodeError as exc:
            stream.problems.append(f"event {i} is not JSON ({exc.msg}): {event.data[:120]!r}")
            continue
        if not isinstance(chunk, dict):
            stream.problems.append(f"event {i} is JSON but not an object: {event.data[:120]!r}")
            continue
        stream.chunks.append(chunk)
    if terminated and not stream.done:
        stream.problems.append("the stream does not end with 'data: [DONE]'")
