"""Micro-benchmarks of the client's hot path (run on demand: ``pytest benchmarks/test_hot_path.py``).

Per SSE event the client parses bytes into events, decodes the JSON, counts the
tokens and timestamps them; per run it computes the metrics. At 128 streams x 100
events/s the whole per-event path must stay well under 78 us on one core.
"""

from __future__ import annotations

import json
import random
import time

from pytest_infer.load.client import StreamSink
from pytest_infer.load.rawhttp import _Connection
from pytest_infer.load.sse_parser import SSEParser, chunk_output, parse_payload
from pytest_infer.load.trace import RequestTrace
from pytest_infer.slo.metrics import request_limits, summarize
from pytest_infer.slo.metrics.catalogue import metric

CHUNK = {
    "id": "chatcmpl-b5dc053f81e3792a",
    "object": "chat.completion.chunk",
    "created": 1795979664,
    "model": "tiny",
    "choices": [
        {
            "index": 0,
            "delta": {"content": "Q"},
            "logprobs": None,
            "finish_reason": None,
            "token_ids": [81],
        }
    ],
}
EVENT = f"data: {json.dumps(CHUNK)}\n\n".encode()  # a vLLM 0.32 chat chunk, 230 bytes
STREAM = EVENT * 128


def test_sse_parse_128_events(benchmark):
    events = benchmark(lambda: SSEParser().feed(STREAM))
    assert len(events) == 128


def test_event_decode_and_count(benchmark):
    payload = EVENT[6:-2]
    assert benchmark(lambda: chunk_output(parse_payload(payload))) == 1


def test_sink_feed_one_event_per_read(benchmark):
    """What one socket read carrying one event costs: timestamp, parse, decode, count, record."""

    def feed_stream():
        sink = StreamSink(RequestTrace(0))
        clock = time.perf_counter_ns
        for _ in range(128):
            sink.feed(EVENT, clock())
        return sink.trace

    trace = benchmark(feed_stream)
    assert trace.client_tokens == 128


def test_raw_connection_chunked_128_events(benchmark):
    """The raw transport's HTTP/1.1 chunk decoding plus the sink, as data_received sees it."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    reads = [head] + [b"%x\r\n%s\r\n" % (len(EVENT), EVENT) for _ in range(128)] + [b"0\r\n\r\n"]

    class Done:
        def done(self):
            return False

        def set_result(self, value):
            pass

    def run():
        conn = _Connection()
        conn._reset(StreamSink(RequestTrace(0)))
        conn.done = Done()  # type: ignore[assignment]
        for data in reads:
            conn.data_received(data)
        return conn.sink.trace

    trace = benchmark(run)
    assert trace.client_tokens == 128 and trace.status == 200


def test_summarize_200_requests_of_128_tokens(benchmark):
    rng = random.Random(0)
    traces = []
    for i in range(200):
        t0 = i * 10_000_000
        times = [t0 + 50_000_000 + k * 10_000_000 + rng.randrange(1_000_000) for k in range(128)]
        traces.append(
            RequestTrace(
                i,
                sent_ns=t0,
                first_byte_ns=t0 + 1,
                event_ns=times,
                event_tokens=[1] * 128,
                end_ns=times[-1] + 1,
                done=True,
                status=200,
                usage_completion_tokens=128,
            )
        )
    summary = benchmark(
        lambda: summarize(traces, 0, traces[-1].end_ns, request_limits({"ttft_p99_ms": 100}))
    )
    assert summary.ok == 200 and len(summary.samples[metric("itl")]) == 200 * 127
