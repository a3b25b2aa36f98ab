"""Null servers built without the fake server: each answers every request the same useless way.

The fake server's null modes prove no check passes against them; these prove the same of servers of the
kind written independently (``wsgiref``, not ``http.server``'s handler; nothing from pytest_infer), so a check
cannot pass by leaning on some habit of the fake server. ``python tests/null_servers.py --port P --mode echo``
serves one from the command line.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

Answer = tuple[str, str, bytes]  # status line, Content-Type, body
ENVELOPE = {
    "error": {"message": "internal error", "type": "server_error", "param": None, "code": None}
}

# mode -> the answer to every request (method, path, body), whatever it asks
MODES: dict[str, Callable[[bytes], Answer]] = {
    "empty-body": lambda body: ("200 OK", "application/json", b""),
    "empty-list": lambda body: ("200 OK", "application/json", b"[]"),
    "server-error": lambda body: (
        "500 Internal Server Error",
        "application/json",
        json.dumps(ENVELOPE).encode(),
    ),
    "echo": lambda body: ("200 OK", "application/json", body),
    "done-stream": lambda body: ("200 OK", "text/event-stream", b"data: [DONE]\n\n"),
}


def app(mode: str) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """The WSGI application of ``mode``: reads the whole request, then gives the mode's answer."""
    respond = MODES[mode]

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        status, content_type, answer = respond(body)
        start_response(
            status, [("Content-Type", content_type), ("Content-Length", str(len(answer)))]
        )
        return [answer]

    return application


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a client that never reads holds a thread, not the shutdown


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(mode: str, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``mode`` on a thread; yields the base URL."""
    server = make_server(host, port, app(mode), server_class=_Server, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=sorted(MODES), required=True)
    args = parser.parse_args(argv)
    server = make_server(
        args.host, args.port, app(args.mode), server_class=_Server, handler_class=_Quiet
    )
    print(f"null server ({args.mode}) ready on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
