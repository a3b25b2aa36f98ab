"""A reverse proxy in front of a real server that changes its answers in one realistic way: the
regressions the upgrade gate must catch, injected on demand (benchmarks/gate_accuracy.py).

Every fault is one named change a new server version could bring: an API deviation (a stream
without its terminator, parameters no longer validated, ``n`` ignored, ...), a structured-output
one (a keyword no longer enforced, a refusal turned into a 5xx, raw control characters in
strings) or a timing one (every stream's first event, or every event, later by a set delay; or every event at a
multiple of its time since the request, ``slower*2``: a server twice as slow, for the SLO limits).

    python benchmarks/fault_proxy.py --upstream http://127.0.0.1:18000 --fault stream-no-done --port 18100
    python benchmarks/fault_proxy.py --upstream URL --fault none --fault 'itl*1.2' --port 0
    python benchmarks/fault_proxy.py --list  # the named faults, what the gate must report for each
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

Json = dict[str, Any]


def _schema_of(request: Json) -> Json | None:
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema")
    return schema if isinstance(schema, dict) else None


@dataclass
class Fault:
    """What the proxy changes. Each hook may return None to leave its part alone."""

    name: str
    area: str  # the part of the gate that must catch it: check, keyword, slo
    expect: tuple[
        str, ...
    ]  # what the gate's regressions must name (a check id, a keyword, a metric)
    request: Callable[[str, Json], Json | None] | None = (
        None  # rewrite the request body before forwarding
    )
    response: Callable[[str, Json, int, Any], tuple[int, Any] | None] | None = (
        None  # rewrite a whole answer
    )
    event: Callable[[str, Json, str], list[str] | None] | None = (
        None  # rewrite one SSE data payload
    )
    first_event_delay_s: float = 0.0
    event_delay_s: float = 0.0
    event_delay_share: float = (
        0.0  # each event later than the one before by this share of the gap it came after
    )
    time_scale: float = (
        1.0  # each event sent at this many times its time since the request (``slower*2``: TTFT,
    )
    # every gap and the whole answer twice as long, a server twice as slow at everything it streams)
    notes: str = ""
    acted: int = 0  # how many requests, answers or events it changed (delays count every stream)


def _drop_n(path: str, request: Json) -> Json | None:
    return {k: v for k, v in request.items() if k != "n"} if request.get("n", 1) != 1 else None


def _clamp_ranges(path: str, request: Json) -> Json | None:
    """Out-of-range sampling parameters no longer refused: clamped before the server sees them."""
    bounds = {
        "temperature": (0, 2),
        "top_p": (0, 1),
        "presence_penalty": (-2, 2),
        "frequency_penalty": (-2, 2),
    }
    fixed = dict(request)
    for name, (low, high) in bounds.items():
        value = request.get(name)
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and not low <= value <= high
        ):
            fixed[name] = min(max(value, low), high)
    return fixed if fixed != request else None


def _no_logprobs(path: str, request: Json, status: int, answer: Any) -> tuple[int, Any] | None:
    if status != 200 or not isinstance(answer, dict) or not request.get("logprobs"):
        return None
    for choice in answer.get("choices") or []:
        choice["logprobs"] = None
    return status, answer


def _flat_errors(path: str, request: Json, status: int, answer: Any) -> tuple[int, Any] | None:
    if 400 <= status < 500 and isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return status, {"detail": answer["error"].get("message", "")}
    return None


def _errors_as_500(path: str, request: Json, status: int, answer: Any) -> tuple[int, Any] | None:
    return (500, answer) if 400 <= status < 500 else None


def _structured_refusal_as_500(
    path: str, request: Json, status: int, answer: Any
) -> tuple[int, Any] | None:
    return (500, answer) if 400 <= status < 500 and _schema_of(request) is not None else None


def _first_string_of(answer: Any) -> tuple[dict, str] | None:
    for choice in (answer.get("choices") or []) if isinstance(answer, dict) else []:
        message = choice.get("message") or {}
        if isinstance(message.get("content"), str):
            return message, message["content"]
    return None


def _loosen_max_length(
    path: str, request: Json, status: int, answer: Any
) -> tuple[int, Any] | None:
    """maxLength no longer enforced: a bounded string schema is answered with a string past its bound."""
    schema = _schema_of(request)
    found = _first_string_of(answer) if status == 200 else None
    if (
        schema is None
        or found is None
        or schema.get("type") != "string"
        or not isinstance(schema.get("maxLength"), int)
    ):
        return None
    found[0]["content"] = json.dumps("a" * (schema["maxLength"] + 3))
    return status, answer


def _raw_tab(path: str, request: Json, status: int, answer: Any) -> tuple[int, Any] | None:
    """Raw control characters let into JSON strings: the first string of a structured answer gets a TAB."""
    found = _first_string_of(answer) if status == 200 and _schema_of(request) is not None else None
    if found is None or '"' not in found[1]:
        return None
    text = found[1]
    at = text.index('"') + 1
    found[0]["content"] = text[:at] + "\t" + text[at:]
    return status, answer


def _drop_done(path: str, request: Json, data: str) -> list[str] | None:
    return [] if data == "[DONE]" else None


def _drop_usage_chunk(path: str, request: Json, data: str) -> list[str] | None:
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    return (
        [] if isinstance(chunk, dict) and chunk.get("usage") and not chunk.get("choices") else None
    )


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "stream-no-done",
            "check",
            ("stream.sse-framing",),
            event=_drop_done,
            notes="streams end without data: [DONE]",
        ),
        Fault(
            "stream-no-usage",
            "check",
            ("stream.include-usage",),
            event=_drop_usage_chunk,
            notes="stream_options.include_usage ignored",
        ),
        Fault(
            "ranges-not-validated",
            "check",
            ("chat.parameter-ranges",),
            request=_clamp_ranges,
            notes="out-of-range sampling parameters accepted",
        ),
        Fault(
            "n-ignored",
            "check",
            ("chat.n",),
            request=_drop_n,
            notes="n > 1 answered with one choice",
        ),
        Fault(
            "logprobs-dropped",
            "check",
            ("chat.logprobs",),
            response=_no_logprobs,
            notes="logprobs requested, null returned",
        ),
        Fault(
            "error-envelope-flat",
            "check",
            ("errors.envelope",),
            response=_flat_errors,
            notes="4xx bodies without the OpenAI error envelope",
        ),
        Fault(
            "errors-as-500",
            "check",
            ("errors.bad-input-4xx",),
            response=_errors_as_500,
            notes="bad input answered 500 instead of 4xx",
        ),
        Fault(
            "maxlength-loosened",
            "keyword",
            ("maxLength",),
            response=_loosen_max_length,
            notes="maxLength not enforced on string schemas",
        ),
        Fault(
            "structured-refusal-500",
            "check",
            ("test_bad_schema_is_refused",),
            response=_structured_refusal_as_500,
            notes="a refused schema answered 500",
        ),
        Fault(
            "raw-tab-in-strings",
            "keyword",
            ("keyword:",),
            response=_raw_tab,
            notes="raw TAB inside JSON strings (invalid JSON)",
        ),
    )
}


def timing_fault(kind: str, delay_ms: float) -> Fault:
    """``ttft`` (every stream's first event later by ``delay_ms``) or ``itl`` (every event ``delay_ms`` later
    than the one before it: the ``k``-th ``k * delay_ms`` later than it came, a decode step that slowed down)."""
    if kind == "ttft":
        return Fault(
            f"ttft+{delay_ms:g}ms",
            "slo",
            ("ttft",),
            first_event_delay_s=delay_ms / 1000,
            notes=f"first streamed event {delay_ms:g} ms later",
        )
    if kind == "itl":
        # every event includes the first content event, so TTFT grows as well as the time per token
        return Fault(
            f"itl+{delay_ms:g}ms",
            "slo",
            ("output_tokens_per_s", "itl", "tpot", "ttft"),
            event_delay_s=delay_ms / 1000,
            notes=f"each streamed event {delay_ms:g} ms later than the last",
        )
    raise ValueError(f"timing fault {kind!r}: ttft or itl")


def proportional_itl_fault(factor: float) -> Fault:
    """``itl*1.2``: every gap between streamed events ``factor`` times as long as it came (the delays accumulate),
    a decode step that got slower in proportion, as more compute per token makes it; ``itl+Nms`` adds a fixed time
    instead, which moves the shortest gaps by a larger share than the typical one."""
    if factor < 1:
        raise ValueError(f"itl*{factor:g}: a proxy can only delay, the factor must be at least 1")
    return Fault(
        f"itl*{factor:g}",
        "slo",
        ("output_tokens_per_s", "itl", "tpot"),
        event_delay_share=factor - 1,
        notes=f"each gap between streamed events x{factor:g}",
    )


def slower_fault(factor: float) -> Fault:
    """``slower*2``: every streamed event sent at ``factor`` times its time since the request came, so TTFT, each
    gap and the end-to-end time are all ``factor`` times as long: the server as a whole that much slower."""
    if factor < 1:
        raise ValueError(
            f"slower*{factor:g}: a proxy can only delay, the factor must be at least 1"
        )
    return Fault(
        f"slower*{factor:g}",
        "slo",
        ("ttft", "output_tokens_per_s", "itl", "tpot", "e2e"),
        time_scale=factor,
        notes=f"each streamed event at x{factor:g} its time since the request",
    )


def loosened_on_share(share: float) -> Fault:
    """maxLength loosened on ``share`` of the requests it can act on (evenly spread, deterministic)."""
    seen = [0]

    def response(path: str, request: Json, status: int, answer: Any) -> tuple[int, Any] | None:
        schema = _schema_of(request)
        if (
            schema is None
            or schema.get("type") != "string"
            or not isinstance(schema.get("maxLength"), int)
        ):
            return None
        seen[0] += 1
        if int(seen[0] * share) == int((seen[0] - 1) * share):
            return None
        return _loosen_max_length(path, request, status, answer)

    return Fault(
        f"maxlength-loosened@{share:.0%}",
        "keyword",
        ("maxLength",),
        response=response,
        notes=f"maxLength not enforced on {share:.0%} of requests",
    )


def fault_named(name: str) -> Fault:
    """A fault by name: one of FAULTS, ``ttft+25ms``, ``itl+3ms``, ``maxlength-loosened@30%``, or ``none``."""
    if name == "none":
        return Fault("none", "none", ())
    if name in FAULTS:
        return FAULTS[name]
    if name.startswith("maxlength-loosened@") and name.endswith("%"):
        return loosened_on_share(
            float(name.removeprefix("maxlength-loosened@").removesuffix("%")) / 100
        )
    if name.startswith("itl*"):
        return proportional_itl_fault(float(name.removeprefix("itl*")))
    if name.startswith("slower*"):
        return slower_fault(float(name.removeprefix("slower*")))
    kind, plus, amount = name.partition("+")
    if plus and amount.endswith("ms"):
        return timing_fault(kind, float(amount.removesuffix("ms")))
    raise ValueError(
        f"unknown fault {name!r}; valid: none, {', '.join(FAULTS)}, ttft+Nms, itl+Nms, itl*F, slower*F,"
        " maxlength-loosened@N%"
    )


def _sse_payloads(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        if line.startswith("data:"):
            yield line[5:].strip()


def _timed(events: Iterator[str]) -> Iterator[tuple[float, str]]:
    """``(arrival time, event)``, read by a thread of its own, so a delayed event never postpones the reading
    (and so the arrival time) of the ones behind it."""
    arrivals: queue.Queue = queue.Queue()

    def read() -> None:
        try:
            for event in events:
                arrivals.put((time.perf_counter(), event))
        except (httpx.HTTPError, OSError, ValueError):
            pass  # the client hung up and the upstream answer was closed under us: nothing left to forward
        finally:
            arrivals.put(None)

    threading.Thread(target=read, name="fault-proxy-reader", daemon=True).start()
    while (item := arrivals.get()) is not None:
        yield item


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = (
        True  # else small SSE writes wait for delayed ACKs (~40 ms) and arrive in bursts
    )
    proxy: FaultProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.proxy.hide_metrics and self.path.split("?")[0] == "/metrics":
            self._hidden()
            return
        self._forward("GET", None)

    def _hidden(self) -> None:
        """No server metrics: a delay the proxy adds is client-side by the server's own histograms, so the SLO
        suite's cross-check would rightly call every delayed run a lagging client and compare nothing."""
        body = b'{"error": "metrics hidden by the fault proxy"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._forward("POST", raw)

    def _forward(self, method: str, raw: bytes | None) -> None:
        started = (
            time.perf_counter()
        )  # the request read: what a time_scale fault scales each event's time from
        fault = self.proxy.fault
        request: Json = {}
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            request = parsed if isinstance(parsed, dict) else {}
            if (
                request
                and fault.request
                and (changed := fault.request(self.path, request)) is not None
            ):
                request, raw = changed, json.dumps(changed).encode()
                fault.acted += 1
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() in ("authorization", "content-type", "accept")
        }
        client = self.proxy.client
        with client.stream(method, self.path, content=raw, headers=headers) as upstream:
            if upstream.headers.get("content-type", "").startswith("text/event-stream"):
                self._stream(upstream, request, fault, started)
            else:
                self._whole(upstream, request, fault)

    def _whole(self, upstream: httpx.Response, request: Json, fault: Fault) -> None:
        body = upstream.read()
        status = upstream.status_code
        if fault.response:
            try:
                answer = json.loads(body)
            except ValueError:
                answer = None
            if (
                answer is not None
                and (changed := fault.response(self.path, request, status, answer)) is not None
            ):
                status, answer = changed
                body = json.dumps(answer).encode()
                fault.acted += 1
        self.send_response(status)
        self.send_header("Content-Type", upstream.headers.get("content-type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(
        self, upstream: httpx.Response, request: Json, fault: Fault, started: float
    ) -> None:
        self.send_response(upstream.status_code)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        first = True
        lag = 0.0  # an event delay accumulates: each token later than the one before, as a slower decode step makes it
        fault.acted += bool(
            fault.first_event_delay_s
            or fault.event_delay_s
            or fault.event_delay_share
            or fault.time_scale != 1
        )
        before: float | None = None  # when the event before came
        for arrived, data in _timed(_sse_payloads(upstream.iter_lines())):
            payloads = fault.event(self.path, request, data) if fault.event else None
            fault.acted += payloads is not None
            if before is not None and data != "[DONE]":
                lag += fault.event_delay_share * (arrived - before)
            before = arrived
            for payload in [data] if payloads is None else payloads:
                lag += fault.event_delay_s if payload != "[DONE]" else 0.0
                due = started + (arrived - started) * fault.time_scale
                wait = (
                    due + lag + (fault.first_event_delay_s if first else 0.0) - time.perf_counter()
                )
                if wait > 0:
                    time.sleep(wait)
                first = False
                self._chunk(f"data: {payload}\n\n".encode())
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer (an aborted stream) is not the proxy's error: say nothing."""


@dataclass
class FaultProxy:
    """``with FaultProxy(upstream, fault) as proxy:`` serves on ``proxy.base_url`` until the block ends."""

    upstream: str
    fault: Fault = field(default_factory=lambda: fault_named("none"))
    host: str = "127.0.0.1"
    port: int = 0
    hide_metrics: bool = False  # answer /metrics with 404 (see _Handler._hidden)

    def __enter__(self) -> FaultProxy:
        self.client = httpx.Client(
            base_url=self.upstream,
            timeout=300,
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        handler = type("Handler", (_Handler,), {"proxy": self})
        self.server = _Server((self.host, self.port), handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, args=(0.02,), name="fault-proxy", daemon=True
        )
        self.thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", help="the server the proxy forwards to")
    parser.add_argument(
        "--fault",
        action="append",
        help="the fault to inject (default none); several: one proxy each, side by side",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=18100,
        help="the first proxy's port, the next ones' above it (0: free ones, as printed)",
    )
    parser.add_argument(
        "--hide-metrics",
        action="store_true",
        help="answer /metrics with 404: no server-side cross-check of the delays",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the named faults as JSON lines and exit",
    )
    args = parser.parse_args(argv)
    if args.list:
        for f in FAULTS.values():
            named = {"name": f.name, "area": f.area, "expect": f.expect, "notes": f.notes}
            print(json.dumps(named))
        return 0
    if not args.upstream:
        parser.error("--upstream is required")
    try:
        faults = [fault_named(name) for name in args.fault or ["none"]]
    except ValueError as exc:
        parser.error(str(exc))
    with contextlib.ExitStack() as stack:
        for i, fault in enumerate(faults):
            port = args.port and args.port + i
            proxy = FaultProxy(args.upstream, fault, port=port, hide_metrics=args.hide_metrics)
            stack.enter_context(proxy)
            print(f"{fault.name}: {proxy.base_url} -> {args.upstream}", flush=True)
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
