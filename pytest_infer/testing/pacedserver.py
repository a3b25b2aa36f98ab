"""A synthetic streaming server that paces tokens on a known schedule and timestamps what it sends.

It is the ground truth for measuring the load client itself: TTFT and ITL are
set (``--ttft-ms``, ``--itl-ms``), every write is timestamped with
``time.perf_counter_ns()`` (CLOCK_MONOTONIC, comparable with the client's clock
on the same host), and the server's own lag (actual write time minus scheduled
time) is reported, so it is known whether the server kept its schedule.

Plain asyncio, HTTP/1.1 keep-alive with chunked bodies (as vLLM's uvicorn sends).
``GET /stats`` returns the per-request records; ``POST /reset`` clears them.
``GET /metrics`` answers Prometheus text under vLLM's names (finished requests, prompt
and generation tokens, TTFT and inter-token histograms, running requests), counted as it
serves; ``--lie-counts`` and ``--lie-ttft-ms`` make it misreport them, for the client
against server cross-check.

    python -m pytest_infer.testing.pacedserver --port 8123 --ttft-ms 50 --itl-ms 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

MODEL = "paced-model"
DONE = b"data: [DONE]\n\n"


@dataclass(slots=True)
class ServedRequest:
    recv_ns: int  # the request's body was fully read
    first_content_ns: int = 0  # just before the first output event was written
    write_ns: list[int] = field(default_factory=list)  # every output event
    lag_ns: list[int] = field(default_factory=list)  # actual minus scheduled write time
    end_ns: int = 0

    @property
    def ttft_ms(self) -> float:
        return (self.first_content_ns - self.recv_ns) / 1e6


@dataclass(slots=True)
class Pacing:
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens: int | None = None  # default: the request's max_tokens
    role_chunk: bool = True  # chat: send {"role": "assistant", "content": ""} at once, as vLLM does
    lie_counts: float = 1.0  # /metrics: every counter multiplied by this
    lie_ttft_ms: float = 0.0  # /metrics: added to every TTFT the histogram observes
    # at most this many streams generate at once; the rest queue (TTFT counts the wait): a
    # capacity
    slots: int | None = None


# vLLM 0.32's bounds (seconds)
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)


class HistogramText:
    """A Prometheus histogram kept by hand (this package imports the standard library only)."""

    def __init__(self, name: str, bounds: tuple[float, ...]) -> None:
        self.name, self.bounds = name, bounds
        self.counts = [0] * len(bounds)
        self.count = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        for i, bound in enumerate(self.bounds):
            if seconds <= bound:
                self.counts[i] += 1
        self.count += 1
        self.sum += seconds

    def text(self, labels: str) -> str:
        lines = [f"# TYPE {self.name} histogram"]
        lines += [
            f'{self.name}_bucket{{{labels},le="{b}"}} {c}.0'
            for b, c in zip(self.bounds, self.counts)
        ]
        lines += [
            f'{self.name}_bucket{{{labels},le="+Inf"}} {self.count}.0',
            f"{self.name}_count{{{labels}}} {self.count}.0",
            f"{self.name}_sum{{{labels}}} {self.sum!r}",
        ]
        return "\n".join(lines)


@dataclass(slots=True)
class Counters:
    """What /metrics reports: counted when a request ends (its last token written, or the client
    gone).
    """

    finished: dict[str, int] = field(default_factory=lambda: {"length": 0, "abort": 0})
    prompt_tokens: int = 0
    generation_tokens: int = 0
    running: int = 0
    ttft: HistogramText = field(
        default_factory=lambda: HistogramText("vllm:time_to_first_token_seconds", TTFT_BUCKETS)
    )
    itl: HistogramText = field(
        default_factory=lambda: HistogramText("vllm:inter_token_latency_seconds", ITL_BUCKETS)
    )

    def text(self, lie: float) -> str:
        labels = f'engine="0",model_name="{MODEL}"'

        def n(value: int) -> str:
            return f"{round(value * lie)}.0"

        lines = ["# TYPE vllm:request_success_total counter"]
        lines += [
            f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} {n(v)}'
            for reason, v in self.finished.items()
        ]
        lines += [
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} {n(self.prompt_tokens)}",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{labels}}} {n(self.generation_tokens)}",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} {self.running}.0",
            self.ttft.text(labels),
            self.itl.text(labels),
        ]
        return "\n".join(lines) + "\n"


class PacedServer:
    def __init__(self, pacing: Pacing, host: str = "127.0.0.1", port: int = 0) -> None:
        self.pacing, self.host, self.port = pacing, host, port
        self.records: list[ServedRequest] = []
        self.counters = Counters()
        self.server: asyncio.AbstractServer | None = None
        self.slots = asyncio.Semaphore(pacing.slots) if pacing.slots else None

    async def start(self) -> None:
        self.server = await asyncio.start_server(
            self._connection, self.host, self.port, backlog=1024
        )
        self.port = self.server.sockets[0].getsockname()[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stats(self) -> dict[str, Any]:
        return {"pacing": asdict(self.pacing), "requests": [asdict(r) for r in self.records]}

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                recv_ns = time.perf_counter_ns()
                await self._handle(method, path, body, recv_ns, writer)
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    def _json(self, writer: asyncio.StreamWriter, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        writer.write(
            f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: "
            f"{len(data)}\r\n\r\n".encode()
            + data
        )

    async def _handle(
        self, method: str, path: str, raw: bytes, recv_ns: int, writer: asyncio.StreamWriter
    ) -> None:
        if method == "GET" and path == "/stats":
            return self._json(writer, 200, self.stats())
        if method == "POST" and path == "/reset":
            self.records.clear()
            return self._json(writer, 200, {})
        if method == "GET" and path == "/metrics":
            data = self.counters.text(self.pacing.lie_counts).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: "
                b"%d\r\n\r\n%s" % (len(data), data)
            )
            return None
        if method == "GET" and path in ("/health", "/v1/models"):
            return self._json(
                writer,
                200,
                {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "paced"}]},
            )
        if path not in ("/v1/chat/completions", "/v1/completions"):
            return self._json(writer, 404, {"error": {"message": f"no route {path}"}})
        body = json.loads(raw or b"{}")
        chat = path.endswith("chat/completions")
        tokens = self.pacing.tokens or int(
            body.get("max_tokens") or body.get("max_completion_tokens") or 16
        )
        prompt_tokens = len(json.dumps(body.get("messages") or body.get("prompt") or "").split())
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": tokens,
            "total_tokens": prompt_tokens + tokens,
        }
        counters = self.counters
        if not body.get("stream"):
            counters.finished["length"] += 1
            counters.prompt_tokens += prompt_tokens
            counters.generation_tokens += tokens
            text = "x" * tokens
            choice = (
                {"index": 0, "message": {"role": "assistant", "content": text}}
                if chat
                else {"index": 0, "text": text}
            )
            return self._json(
                writer,
                200,
                {"id": "paced", "choices": [choice | {"finish_reason": "length"}], "usage": usage},
            )
        record = ServedRequest(recv_ns)
        self.records.append(record)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: "
            b"chunked\r\n\r\n"
        )
        obj = "chat.completion.chunk" if chat else "text_completion"

        def event(choice: dict[str, Any] | None, extra: dict[str, Any] | None = None) -> bytes:
            payload = json.dumps(
                {
                    "id": "paced",
                    "object": obj,
                    "model": MODEL,
                    "choices": [choice] if choice else [],
                    **(extra or {}),
                }
            )
            data = f"data: {payload}\n\n".encode()
            return b"%x\r\n%s\r\n" % (len(data), data)

        def token(finish: str | None) -> bytes:
            choice = {"index": 0, "delta": {"content": "x"}} if chat else {"index": 0, "text": "x"}
            return event(choice | {"finish_reason": finish})

        if chat and self.pacing.role_chunk:
            writer.write(
                event(
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                )
            )
            await writer.drain()
        if self.slots is None:
            return await self._generate(
                record, tokens, prompt_tokens, event(None, {"usage": usage}), token, writer
            )
        # queued: the schedule starts when a slot frees, TTFT still counts from arrival
        async with self.slots:
            return await self._generate(
                record, tokens, prompt_tokens, event(None, {"usage": usage}), token, writer
            )

    async def _generate(
        self,
        record: ServedRequest,
        tokens: int,
        prompt_tokens: int,
        usage_event: bytes,
        token: Any,
        writer: asyncio.StreamWriter,
    ) -> None:
        recv_ns, counters = record.recv_ns, self.counters
        start_ns = (
            time.perf_counter_ns() if self.slots is not None else recv_ns
        )  # a queued request starts when it gets a slot
        # Every output event is a timer callback writing pre-encoded bytes: a coroutine woken per
        # token (asyncio.sleep) cost the server its schedule at 64+ streams on one core.
        middle, final = token(None), token("length")
        tail = usage_event + b"%x\r\n%s\r\n0\r\n\r\n" % (len(DONE), DONE)
        loop = asyncio.get_running_loop()
        to_loop_s = loop.time() - time.perf_counter_ns() / 1e9  # both CLOCK_MONOTONIC; offset once
        first = start_ns + int(self.pacing.ttft_ms * 1e6)
        gap = int(self.pacing.itl_ms * 1e6)
        transport = writer.transport
        finished = loop.create_future()
        counters.running += 1

        def end(reason: str) -> None:
            counters.running -= 1
            counters.finished[reason] += 1
            counters.prompt_tokens += prompt_tokens
            counters.generation_tokens += len(record.write_ns)
            finished.set_result(None)

        def write(i: int) -> None:
            if transport.is_closing():  # the client went away (a cancelled cool-down request)
                end("abort")
                return
            now = time.perf_counter_ns()
            last = i == tokens - 1
            transport.write(final if last else middle)
            record.write_ns.append(now)
            record.lag_ns.append(now - (first + i * gap))
            if i == 0:
                record.first_content_ns = now
                counters.ttft.observe(
                    max(0.0, (now - recv_ns) / 1e9 + self.pacing.lie_ttft_ms / 1e3)
                )
            else:
                counters.itl.observe((now - record.write_ns[-2]) / 1e9)
            if last:
                transport.write(tail)
                record.end_ns = time.perf_counter_ns()
                end("length")
            else:
                loop.call_at((first + (i + 1) * gap) / 1e9 + to_loop_s, write, i + 1)

        loop.call_at(first / 1e9 + to_loop_s, write, 0)
        await finished
        if not transport.is_closing():
            await writer.drain()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pacedserver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument(
        "--tokens", type=int, default=None, help="output tokens per request (default: max_tokens)"
    )
    parser.add_argument("--no-role-chunk", action="store_true")
    parser.add_argument(
        "--lie-counts", type=float, default=1.0, help="/metrics: multiply every counter by this"
    )
    parser.add_argument(
        "--lie-ttft-ms", type=float, default=0.0, help="/metrics: add this to every TTFT observed"
    )
    parser.add_argument(
        "--slots",
        type=int,
        default=None,
        help="at most this many streams generate at once; the rest queue",
    )
    args = parser.parse_args(argv)
    pacing = Pacing(
        args.ttft_ms,
        args.itl_ms,
        args.tokens,
        not args.no_role_chunk,
        args.lie_counts,
        args.lie_ttft_ms,
        args.slots,
    )

    async def serve() -> None:
        server = PacedServer(pacing, args.host, args.port)
        await server.start()
        print(
            f"pacedserver ready on {server.base_url} "
            f"(ttft {args.ttft_ms} ms, itl {args.itl_ms} ms)",
            flush=True,
        )
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
