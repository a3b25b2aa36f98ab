"""A minimal HTTP/1.1 streaming client on asyncio's Protocol API: the fast transport.

Measured against the paced server (benchmarks/), httpx's async stack spends
hundreds of microseconds per SSE event, so at 16+ streams x 100 events/s the
client, not the server, set the timestamps. Here each ``data_received`` is
timestamped on entry, in the event loop's own callback, before any parsing: no
stream reader, no task switch between the socket and the clock.

Scope, on purpose: plain ``http://`` POST with a JSON body; responses framed by
``Content-Length``, chunked transfer-encoding, or connection close; keep-alive
connections reused one request at a time. ``https://`` endpoints use httpx.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlparse

from ..client.endpoint import Endpoint
from ..outcomes import InferError
from .client import StreamSink
from .trace import RequestTrace

MAX_ERROR_BODY = 2000


class ProtocolError(InferError):
    """The server's response does not parse as HTTP/1.1."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection, one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._reset(None)

    def _reset(self, sink: StreamSink | None) -> None:
        self.sink = sink
        self.done: asyncio.Future | None = None
        self.head = b""
        self.in_body = False
        self.status = 0
        self.chunked = False
        self.remaining: int | None = None  # Content-Length left, or the current chunk's size left
        self.chunk_buffer = b""
        self.error_body = b""
        self.keep_alive = True

    # --- asyncio.Protocol ----------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        if self.done is None or self.done.done():
            return  # bytes after a cancelled request: the connection is discarded
        try:
            if not self.in_body:
                # RFC 9112 2.2: empty lines before a status line are ignored (a chunked body's last
                # CRLF that came late)
                self.head = (self.head + data).lstrip(b"\r\n")
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    return
                data = self.head[end + 4 :]
                self._parse_head(self.head[:end])
                self.in_body = True
            if data:
                self._body(data, now)
            if self.remaining == 0 and not self.chunked:
                self._finish(now)
        except ProtocolError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            if self.in_body and self.remaining is None and not self.chunked:  # close-delimited body
                self._finish(time.perf_counter_ns())
            else:
                self._fail(
                    exc or ConnectionResetError("the server closed the connection mid-response")
                )

    # --- response parsing -----------------------------------------------------
    def _parse_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ProtocolError(f"bad status line {lines[0][:100]!r}")
        self.status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip().lower()
        self.chunked = b"chunked" in headers.get(b"transfer-encoding", b"")
        length = headers.get(b"content-length")
        self.remaining = None if self.chunked or length is None else int(length)
        self.keep_alive = headers.get(b"connection") != b"close" and (
            self.chunked or length is not None
        )
        if self.sink is not None:
            self.sink.trace.status = self.status

    def _deliver(self, data: bytes, now: int) -> None:
        if self.status == 200 and self.sink is not None:
            self.sink.feed(data, now)
        elif len(self.error_body) < MAX_ERROR_BODY:
            self.error_body += data

    def _body(self, data: bytes, now: int) -> None:
        if not self.chunked:
            if self.remaining is not None:
                data = data[: self.remaining]
                self.remaining -= len(data)
            self._deliver(data, now)
            return
        buf = self.chunk_buffer + data if self.chunk_buffer else data
        pos, out = 0, []
        while True:
            if self.remaining is not None and self.remaining > 0:  # inside a chunk's data
                take = buf[pos : pos + self.remaining]
                out.append(take)
                pos += len(take)
                self.remaining -= len(take)
                if self.remaining:
                    break
                self.remaining = -2  # its CRLF follows
            if self.remaining == -2:
                if len(buf) - pos < 2:
                    break
                pos += 2
                self.remaining = None
            end = buf.find(b"\r\n", pos)
            if end < 0:
                break
            try:
                size = int(buf[pos:end].split(b";", 1)[0], 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size line {buf[pos:end][:40]!r}") from None
            pos = end + 2
            if size == 0:
                self.chunk_buffer = b""
                if out:
                    self._deliver(b"".join(out), now)
                self._finish(now)
                return
            self.remaining = size
        self.chunk_buffer = buf[pos:]
        if out:
            self._deliver(b"".join(out), now)

    def _finish(self, now: int) -> None:
        if self.sink is not None:
            if self.status != 200:
                self.sink.trace.error = (
                    f"HTTP {self.status}: {self.error_body[:500].decode(errors='replace')}"
                )
            self.sink.close(now)
        if self.done is not None and not self.done.done():
            self.done.set_result(None)
        if not self.keep_alive and self.transport is not None:
            self.transport.close()

    def _fail(self, exc: BaseException) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)
        if self.transport is not None:
            self.transport.close()

    # --- one request ------------------------------------------------------------
    def start(self, request: bytes, sink: StreamSink) -> asyncio.Future:
        self._reset(sink)
        self.done = asyncio.get_running_loop().create_future()
        sink.trace.sent_ns = time.perf_counter_ns()
        assert self.transport is not None
        self.transport.write(request)
        return self.done

    @property
    def reusable(self) -> bool:
        return (
            not self.closed
            and self.keep_alive
            and self.transport is not None
            and not self.transport.is_closing()
        )


class RawClient:
    """Streamed POSTs to one ``http://host:port`` over a pool of keep-alive connections."""

    def __init__(self, endpoint: Endpoint) -> None:
        url = urlparse(endpoint.base_url)
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"RawClient speaks plain http only, not {endpoint.base_url!r}")
        self.host, self.port = url.hostname, url.port or 80
        self.prefix = url.path.rstrip("/")
        self.timeout = endpoint.timeout
        netloc = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        auth = "".join(f"{name}: {value}\r\n" for name, value in endpoint.headers.items())
        self._header = (
            f"Host: {netloc}\r\nContent-Type: application/json\r\nAccept: "
            f"text/event-stream\r\n{auth}"
        )
        self._idle: list[_Connection] = []

    async def _connection(self, *, fresh: bool = False) -> tuple[_Connection, bool]:
        """A connection and whether it was kept from an earlier request."""
        while self._idle and not fresh:
            conn = self._idle.pop()
            if conn.reusable:
                return conn, True
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(_Connection, self.host, self.port)
        return conn, False

    async def stream(self, path: str, body: dict[str, Any], trace: RequestTrace) -> RequestTrace:
        """Send one streamed request and fill ``trace``; never raises except on cancellation."""
        content = json.dumps(body).encode()
        request = (
            f"POST {self.prefix}{path} HTTP/1.1\r\n{self._header}Content-Length: "
            f"{len(content)}\r\n\r\n".encode()
            + content
        )
        sink = StreamSink(trace)
        conn: _Connection | None = None
        try:
            conn, kept = await self._connection()
            try:
                await asyncio.wait_for(conn.start(request, sink), self.timeout)
            except OSError:
                # A kept connection that closed before any byte of an answer was closed by the
                # server while idle: the request never ran, so it goes once more on a fresh one.
                # llama-server b11312 closes after every streamed answer though its headers offer
                # keep-alive (tests/slo/test_load.py shows the loss).
                if not kept or conn.head or conn.in_body:
                    raise
                conn, _ = await self._connection(fresh=True)
                await asyncio.wait_for(conn.start(request, sink), self.timeout)
        except asyncio.CancelledError:
            trace.cancelled = True
            if conn is not None and conn.transport is not None:
                conn.transport.close()
            raise
        except (TimeoutError, OSError, ProtocolError) as exc:
            trace.end_ns = time.perf_counter_ns()
            trace.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if conn is not None and conn.transport is not None:
                conn.transport.close()
            return trace
        if conn.reusable:
            self._idle.append(conn)
        return trace

    async def aclose(self) -> None:
        for conn in self._idle:
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
