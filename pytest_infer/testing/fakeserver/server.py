"""The HTTP side of the fake server: the handler that applies the ``Deviation`` hooks around each
API's answer, the routes, the threaded server, and the process the command line starts."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import chat, completions, messages, responses
from .common import (
    CONTEXT_LENGTH,
    MESSAGES,
    MODEL,
    RESPONSES,
    TYPED_STREAMS,
    Deviation,
    ErrorReply,
    Event,
    FakeState,
    error_body,
)
from .faults import FAULTS

Route = Callable[[FakeState, dict], dict | list[Event]]
ROUTES: dict[str, Route] = {
    "/v1/chat/completions": chat.answer,
    "/v1/completions": completions.answer,
    "/tokenize": completions.tokenize,
    "/detokenize": completions.detokenize,
    RESPONSES: responses.answer,
    MESSAGES: messages.answer,
    MESSAGES + "/count_tokens": messages.count_tokens,
}


def route(path: str) -> Route | None:
    """What answers a POST to ``path``; None: no route."""
    if path.startswith(RESPONSES + "/") and path.endswith("/cancel"):
        return lambda state, body: responses.cancel(state, path)
    return ROUTES.get(path)


def model_card() -> dict:
    """The card with the context it refuses prompts past, advertised as vLLM does
    (``max_model_len``)."""
    return {
        "id": MODEL,
        "object": "model",
        "created": 1_700_000_000,
        "owned_by": "fakeserver",
        "max_model_len": CONTEXT_LENGTH,
    }


def get(state: FakeState, path: str) -> tuple[int, Any]:
    """The answer to ``GET path``: health, version, the models, a stored response."""
    fixed = {"/health": {}, "/version": {"version": "9.9.9"}}
    if path in fixed:
        return 200, fixed[path]
    if path == "/v1/models":
        return 200, {"object": "list", "data": [model_card()]}
    if path.startswith(RESPONSES + "/"):
        return responses.stored(state, path)
    if path.startswith("/v1/models/"):
        name = path.removeprefix("/v1/models/")
        if name == MODEL:
            return 200, model_card()
        message = f"model {name} not found"
        return 404, error_body(message, "invalid_request_error", "model", "model_not_found")
    return 404, error_body(f"no route {path}", "not_found_error")


def _json_body(headers: Any, raw: bytes) -> dict:
    """The request's JSON object; ValueError (and its kin) when it is not one."""
    if (headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
        raise ValueError("Content-Type must be application/json")
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    return body


def _payload(path: str, event: Event) -> bytes:
    """One event as the stream writes it."""
    if isinstance(event, bytes):
        return event
    if isinstance(event, dict) and path in TYPED_STREAMS and "type" in event:
        return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
    text = event if isinstance(event, str) else json.dumps(event)
    return f"data: {text}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    server_version = "fakeserver/1.0"
    protocol_version = "HTTP/1.1"
    state: FakeState

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
        pass

    # --- transport -------------------------------------------------------
    def _send_json(self, status: int, body: Any) -> None:
        dev = self.state.deviation
        if status >= 400 and dev.error is not None:
            body = dev.error(self.path, status, body)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (dev.headers(self.path, status) if dev.headers else {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[Event], delay: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in events:
            if callable(event):  # a pause mid-stream (``stall_streams``): nothing is sent
                event()
                continue
            try:
                self.wfile.write(_payload(self.path, event))
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            if delay:
                time.sleep(delay)

    def _unauthorized(self) -> bool:
        """Answer 401 (as vLLM does with VLLM_API_KEY) when a key is required and missing or
        wrong."""
        key, dev = self.state.api_key, self.state.deviation
        bearer = self.headers.get("Authorization") == f"Bearer {key}"
        if not key or not self.path.startswith("/v1") or bearer:
            return False
        if dev.authorize is not None and dev.authorize(self.command, self.path) is False:
            return False
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send_json(401, error_body("Unauthorized", "authentication_error"))
        return True

    # --- the APIs, for a ``raw_stream`` deviation that answers as the server would ---------
    def _chat(self, body: dict) -> dict | list[Event]:
        return chat.answer(self.state, body)

    def _completions(self, body: dict) -> dict | list[Event]:
        return completions.answer(self.state, body)

    # --- requests --------------------------------------------------------
    def do_GET(self) -> None:
        self.state.requests.append(("GET", self.path, None))
        if self._unauthorized():
            return
        dev = self.state.deviation
        if dev.request and (answer := dev.request(self.path, {})) is not None:
            return self._send_json(*answer)
        self._send_json(*get(self.state, self.path))

    def do_POST(self) -> None:
        if self._unauthorized():
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = _json_body(self.headers, raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            self.state.requests.append(("POST", self.path, raw))
            dev = self.state.deviation
            if dev.malformed and (answer := dev.malformed(self.path, raw)) is not None:
                return self._send_json(*answer)
            return self._send_json(400, error_body(f"malformed JSON body: {exc}"))
        self.state.requests.append(("POST", self.path, body))
        dev = self.state.deviation
        if dev.request and (answer := dev.request(self.path, body)) is not None:
            return self._send_json(*answer)
        if dev.raw_stream is not None:
            return dev.raw_stream(self.path, body, self)
        self._answer(dev, body)

    def _answer(self, dev: Deviation, body: dict) -> None:
        """The route's answer, through the deviation's ``events`` or ``response`` hook; its
        refusal as an error answer; any other exception a 500 (a real server's bug), never a
        dropped connection."""
        answer = route(self.path)
        if answer is None:
            return self._send_json(404, error_body(f"no route {self.path}", "not_found_error"))
        try:
            events_or_response = answer(self.state, body)
        except ErrorReply as exc:
            if self.path.startswith(MESSAGES):
                return self._send_json(exc.status, messages.error(exc))
            return self._send_json(exc.status, error_body(str(exc), param=exc.param, code=exc.code))
        except Exception as exc:
            message = f"internal error: {type(exc).__name__}"
            return self._send_json(500, error_body(message, "internal_server_error"))
        if isinstance(events_or_response, list):
            events = events_or_response
            return self._send_events(dev.events(self.path, body, events) if dev.events else events)
        response = events_or_response
        self._send_json(200, dev.response(self.path, body, response) if dev.response else response)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections past it: a batch of 16 at once lost
    # some (the consistency suite's). Real servers listen with a backlog in the hundreds or more
    # (uvicorn: 2048).
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer is what the abort and stall checks do on purpose:
        nothing to print. Printed tracebacks from server threads came with pytest INTERNALERRORs
        in nested runs (CPython 3.11.7 "AST constructor recursion depth mismatch")."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeServer:
    """The fake server on a free loopback port, in a background thread."""

    def __init__(
        self,
        deviation: Deviation | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        logit_bias: bool = False,
    ) -> None:
        self.state = FakeState(deviation, api_key=api_key)
        # Honour logit_bias (off: the default fake ignores it, as some servers do).
        self.state.logit_bias = logit_bias
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = _HTTPServer((host, port), handler)
        # A short poll: stopping waits for the serving loop's next wake-up, and tests stop
        # thousands of these.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever,
            args=(0.02,),
            name="fakeserver",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host if isinstance(host, str) else host.decode()}:{port}"

    @property
    def requests(self) -> list[tuple[str, str, Any]]:
        return self.state.requests

    def set_deviation(self, deviation: Deviation | None) -> None:
        self.state.deviation = deviation or Deviation()

    def forget(self) -> None:
        """What it saw, cached and stored, gone: tests that share one server each meet it as
        new."""
        with self.state.lock:
            self.state.requests.clear()
            self.state.cached_prompts.clear()
            self.state.responses.clear()

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


COMMAND = "pytest_infer.testing.fakeserver"  # the module ``python -m`` starts it as


@contextmanager
def serving_process(fault: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The fake server with ``fault`` (a name in FAULTS) in a process of its own, one that can
    really die; its base URL once it listens. ``env``: the process's whole environment
    (``VLLM_API_KEY`` sets its key)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", COMMAND, "--port", str(port), "--fault", fault]
    proc = subprocess.Popen(argv, env=env)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fakeserver")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fault", choices=sorted(FAULTS), default="none")
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument(
        "--exit-at-start",
        type=int,
        default=None,
        help="print log lines, then exit with this code",
    )
    parser.add_argument(
        "--print-env",
        action="append",
        default=[],
        help="log this variable's value at start (servers that dump their config)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _arguments(argv)
    for name in args.print_env:
        print(f"config: {name}={os.environ.get(name, '')}", flush=True)
    print(f"fakeserver starting on {args.host}:{args.port} (fault {args.fault})", flush=True)
    if args.exit_at_start is not None:
        for i in range(5):
            print(f"loading shard {i}", flush=True)
        print("RuntimeError: simulated start-up crash", flush=True)
        raise SystemExit(args.exit_at_start)
    time.sleep(args.startup_delay)
    api_key = os.environ.get("VLLM_API_KEY") or None
    server = FakeServer(FAULTS[args.fault](), args.host, args.port, api_key=api_key)
    print("fakeserver ready", flush=True)
    server.httpd.serve_forever()
