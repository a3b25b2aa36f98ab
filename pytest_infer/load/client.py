"""The streaming request: one POST, timestamps taken as bytes arrive, parsing after.

httpx (retries off, as everywhere in this project). Each socket read is
timestamped the moment it returns; the events it carries share that time, so
parsing cost never shifts a timestamp, it can only delay the next read (which
the event-loop lag monitor sees).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from ..client.endpoint import Endpoint
from ..client.errors import carries_error
from ..client.tls import tls
from .sse_parser import SSEParser, chunk_output, parse_payload
from .trace import RequestTrace

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


def async_client(endpoint: Endpoint, *, concurrency: int) -> httpx.AsyncClient:
    """One connection per concurrent stream, kept alive, so no request waits on the pool."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(
        base_url=endpoint.base_url,
        headers=endpoint.headers,
        timeout=endpoint.timeout,
        limits=limits,
        verify=tls(),
    )


class StreamSink:
    """Turns body bytes, each with its arrival time, into a RequestTrace: shared by both
    transports.
    """

    __slots__ = ("parser", "trace")

    def __init__(self, trace: RequestTrace) -> None:
        self.trace = trace
        self.parser = SSEParser()

    def feed(self, chunk: bytes, now: int) -> None:
        trace = self.trace
        if trace.first_byte_ns is None:
            trace.first_byte_ns = now
        for payload in self.parser.feed(chunk):
            if payload == b"[DONE]":
                trace.done = True
                trace.end_ns = now
                continue
            data = parse_payload(payload)
            if data is None:
                continue
            n = chunk_output(data)
            if n:
                trace.event_ns.append(now)
                trace.event_tokens.append(n)
            usage = data.get("usage")
            if usage:
                trace.usage_completion_tokens = usage.get("completion_tokens")
                trace.usage_prompt_tokens = usage.get("prompt_tokens")
            if carries_error(data):
                trace.error = f"error event in stream: {json.dumps(data['error'])[:300]}"

    def close(self, now: int) -> None:
        if self.trace.end_ns is None:
            self.trace.end_ns = now


async def stream_request(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], trace: RequestTrace
) -> RequestTrace:
    """Send one streamed request through httpx and fill ``trace``; never raises except on
    cancellation.
    """
    clock = time.perf_counter_ns
    sink = StreamSink(trace)
    content = json.dumps(body).encode()
    request = client.build_request(
        "POST", path, content=content, headers={"Content-Type": "application/json"}
    )
    response: httpx.Response | None = None
    try:
        trace.sent_ns = clock()
        response = await client.send(request, stream=True)
        trace.status = response.status_code
        if response.status_code != 200:
            text = (await response.aread())[:500].decode(errors="replace")
            trace.end_ns = clock()
            trace.error = f"HTTP {response.status_code}: {text}"
            return trace
        async for chunk in response.aiter_raw():
            sink.feed(chunk, clock())
        sink.close(clock())
    except asyncio.CancelledError:
        trace.cancelled = True
        raise
    except httpx.HTTPError as exc:
        trace.end_ns = clock()
        trace.error = f"{type(exc).__name__}: {exc}"
    finally:
        if response is not None:
            await response.aclose()
    return trace
