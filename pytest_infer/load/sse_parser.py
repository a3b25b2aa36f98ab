"""Incremental SSE parsing and the output-token count of one chunk: the client's hot path.

Kept free of I/O so that it is micro-benchmarked (benchmarks/test_hot_path.py)
and unit-tested on byte streams cut at every position.
"""

from __future__ import annotations

import json
from typing import Any


class SSEParser:
    """Feed bytes as they arrive; get back the ``data`` payload of every complete event.

    Follows the WHATWG event-stream rules that matter for OpenAI streams: lines end
    in LF, CRLF or CR; ``data:`` lines of one event are joined with LF; an empty line
    dispatches; comments (``:``) and other fields are ignored.
    """

    __slots__ = ("_buffer", "_data")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            # hold a trailing CR: it may be the first half of a CRLF split across reads
            held = buffer.endswith(b"\r")
            if held:
                buffer = buffer[:-1]
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                buffer += b"\r"
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        out: list[bytes] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append(b"\n".join(data))
                    data.clear()
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
        return out

    def close(self) -> list[bytes]:
        """End of body: an event without its closing blank line is not dispatched (the spec)."""
        self._buffer = b""
        self._data.clear()
        return []


def chunk_output(chunk: dict[str, Any]) -> int:
    """How many generated tokens one chat or completions chunk carries (0: none).

    Output is non-empty content, reasoning content, tool-call arguments, or
    completion text. The count is exact when the server says it (``token_ids``,
    or one logprobs entry per token), else 1 per output-carrying choice.
    """
    tokens = 0
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if delta is not None:
            carried = (
                delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning")
            )
            if not carried:
                for call in delta.get("tool_calls") or ():
                    if (call.get("function") or {}).get("arguments"):
                        carried = True
                        break
        else:
            carried = choice.get("text")
        if not carried:
            continue
        ids = choice.get("token_ids")
        if ids:
            tokens += len(ids)
            continue
        logprobs = choice.get("logprobs")
        if logprobs:
            entries = logprobs.get("content") or logprobs.get("tokens")
            if entries:
                tokens += len(entries)
                continue
        tokens += 1
    return tokens


def parse_payload(payload: bytes) -> dict[str, Any] | None:
    """JSON of one event, or None for a payload that is not a JSON object."""
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
