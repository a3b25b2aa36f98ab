"""The robustness kit in-process: each answer is classified, counted and reported exactly.

The suite's pytester runs show the kit working end to end, but read none of its messages,
tallies or reproducers exactly. Here a scripted HTTP server on a free port answers each
test's way (a status, a body in parts, a stall, a dropped connection), so every message,
counter and boundary is pinned in a few seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from pytest_infer.client.answers import completion_problem, stream_problem
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.client.http import InferClient
from pytest_infer.client.sse import SSEStream
from pytest_infer.outcomes import Inconclusive
from pytest_infer.robustness.kit import (
    Answer,
    BadRequest,
    Guard,
    envelope_problem,
    known_good,
    reproducer,
)

PATIENT = 5.0  # the deadline where an answer is expected at once: ample on a loaded machine
SHORT = 1.0  # the deadline where a test waits it out; messages show it as "1s"
MEGABYTE = 1 << 20  # the documented cap on an answer's bytes read
SPELLED_OUT = 4096  # the largest body a reproducer spells out
DISCONNECTED = "RemoteProtocolError: Server disconnected without sending a response."
ENVELOPE = b'{"error": {"message": "n must be positive", "type": "invalid_request_error"}}'
COMPLETION = (
    b'{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},'
    b' "finish_reason": "length"}]}'
)
CHUNK = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\n'

Reply = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    """Reads the whole request (so a drop is a clean close, not a reset), records it, plays the path's reply."""

    server: Scripted

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._reply()

    def do_POST(self) -> None:
        self._reply()

    def _reply(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append(
            (self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        try:
            self.server.plan[self.path](self)
        except OSError:  # the client hung up mid-answer: what the kit is for
            pass


class Scripted(ThreadingHTTPServer):
    """A server whose answer per path is set by the test; it serves chat and /v1/models until told otherwise."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.plan: dict[str, Reply] = {
            "/v1/models": answer(200, b'{"object": "list", "data": []}'),
            "/v1/chat/completions": answer(200, COMPLETION),
        }
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.released = threading.Event()  # set at teardown: every stalled answer ends

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        pass


def answer(
    status: int,
    *parts: bytes,
    gap: float = 0.0,
    hold: bool = False,
    content_type: str | None = None,
) -> Reply:
    """HTTP ``status``, then ``parts`` each after ``gap`` seconds, read until close (no Content-Length); ``hold`` keeps
    it open."""

    def reply(handler: Handler) -> None:
        handler.send_response(status)
        if content_type:
            handler.send_header("Content-Type", content_type)
        handler.end_headers()
        for part in parts:
            if gap and handler.server.released.wait(gap):
                return
            handler.wfile.write(part)
        if hold:
            handler.server.released.wait(5.0)

    return reply


def sse(*events: bytes) -> Reply:
    """A 200 event stream of ``events``."""
    return answer(200, *events, content_type="text/event-stream")


GOOD = b'{"n": 1}'  # the positive control of the bad request BAD below


def unless_control(reply: Reply) -> Reply:
    """``reply`` to every request but the positive control (the body GOOD), which is served."""
    served = answer(200, b'{"ok": true}')

    def dispatch(handler: Handler) -> None:
        (served if handler.server.seen[-1][3] == GOOD else reply)(handler)

    return dispatch


def late(seconds: float, reply: Reply) -> Reply:
    """``reply`` after ``seconds`` without a byte: the headers themselves are late."""

    def delayed(handler: Handler) -> None:
        if not handler.server.released.wait(seconds):
            reply(handler)

    return delayed


def drop(handler: Handler) -> None:
    """Close the connection without answering."""
    handler.close_connection = True


@dataclass
class Process:
    """What Guard needs of a ServerInfo."""

    running: bool = True
    model: str = "tiny"

    def alive(self) -> bool:
        return self.running


class Curl:
    """Stands in for InferClient: shows every argument the reproducer passes it."""

    def curl(self, method: str, path: str, body: object = None, *, stream: bool = False) -> str:
        return f"curl {method} {path} body={body} stream={stream}"


class Record(list):
    """Stands in for the infer_record fixture: keeps what was recorded."""

    def __call__(self, key: str, value: object) -> None:
        self.append((key, value))


@pytest.fixture
def server() -> Iterator[Scripted]:
    srv = Scripted()
    thread = threading.Thread(
        target=srv.serve_forever, args=(0.01,), daemon=True
    )  # a quick shutdown
    thread.start()
    yield srv
    srv.released.set()
    srv.shutdown()
    srv.server_close()


def guard_of(
    srv: Scripted, *, timeout: float = PATIENT, running: bool = True, api_key: str | None = None
) -> Guard:
    return Guard("t1", Process(running), Endpoint(srv.base_url, "tiny", api_key, timeout), {})


# --- BadRequest, Answer ------------------------------------------------------------------------------
def test_a_case_defaults_to_a_json_chat_request_read_whole_with_the_routes_control():
    assert BadRequest("c", {}) == BadRequest(
        "c", {}, "/v1/chat/completions", {"Content-Type": "application/json"}, False, None
    )


def test_bytes_are_sent_as_they_are():
    body = b'{"broken": \xff'
    assert BadRequest("c", body).content() is body


def test_a_dict_is_sent_as_utf8_json_even_with_a_lone_surrogate():
    """Non-ASCII stays raw UTF-8 (not \\u escapes) and a lone surrogate is encoded, not refused: both are test
    inputs."""
    assert (
        BadRequest("c", {"text": "é", "half": "\ud800"}).content()
        == b'{"text": "\xc3\xa9", "half": "\xed\xa0\x80"}'
    )


def test_an_answer_defaults_to_no_status_text_time_or_error():
    assert Answer("4xx") == Answer("4xx", None, "", 0.0, "")


# --- envelope_problem --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Bad Request", "the body is not JSON"),
        ("", "the body is not JSON"),
        ("[1, 2]", "no 'error' object (top-level keys: list)"),
        ('"oops"', "no 'error' object (top-level keys: str)"),
        (
            '{"message": "m", "detail": "d"}',
            "no 'error' object (top-level keys: ['detail', 'message'])",
        ),
        ('{"error": "n must be positive"}', "no 'error' object (top-level keys: ['error'])"),
        ('{"error": {"type": "invalid_request_error"}}', "error.message is not a non-empty string"),
        (
            '{"error": {"message": "", "type": "invalid_request_error"}}',
            "error.message is not a non-empty string",
        ),
        (
            '{"error": {"message": 7, "type": "invalid_request_error"}}',
            "error.message is not a non-empty string",
        ),
        ('{"error": {"message": "n must be positive"}}', "error.type is missing"),
        ('{"error": {"message": "n must be positive", "type": null}}', None),
        (ENVELOPE.decode(), None),
    ],
)
def test_envelope_problem_names_what_is_wrong(text, problem):
    assert envelope_problem(text) == problem


# --- reproducer --------------------------------------------------------------------------------
def test_a_reproducer_passes_path_and_stream_and_quotes_each_header():
    case = BadRequest(
        "c",
        {"text": "é 'q'"},
        path="/v1/completions",
        headers={"Content-Type": "text/plain", "X-Note": "it's"},
        stream=True,
    )
    assert (
        reproducer(Curl(), case)
        == "curl POST /v1/completions body=None stream=True -H 'Content-Type: text/plain' -H 'X-Note: it'\"'\"'s'"
        " --data-raw '{\"text\": \"é '\"'\"'q'\"'\"'\"}'"
    )


def test_a_body_of_the_limit_is_spelled_out():
    assert reproducer(Curl(), BadRequest("c", b"a" * SPELLED_OUT, headers={})) == (
        "curl POST /v1/chat/completions body=None stream=False -H 'Content-Type:' --data-raw "
        + "a" * SPELLED_OUT
    )


def test_a_body_over_the_limit_is_described_not_spelled_out():
    assert reproducer(Curl(), BadRequest("c", b"a" * (SPELLED_OUT + 1), headers={})) == (
        "curl POST /v1/chat/completions body=None stream=False -H 'Content-Type:' --data-binary @body.json  # body:"
        " 4097 bytes, starting b'" + "a" * 120 + "'"
    )


def test_a_non_utf8_body_is_piped_through_printf_with_escapes():
    """Printable ASCII passes as is; a backslash and every byte outside 32..126 become \\0ddd, which POSIX printf %b
    turns back."""
    case = BadRequest("c", b' ~\x1f\x7f\\\xff"', headers={})
    assert (
        reproducer(Curl(), case)
        == r"""printf '%b' ' ~\0037\0177\0134\0377"' | curl POST /v1/chat/completions body=None stream=False """
        r"""-H 'Content-Type:' --data-binary @-"""
    )


def test_a_utf8_body_with_a_nul_is_piped_too():
    """An argument cannot carry a NUL: such a body goes through printf although it is valid UTF-8."""
    assert (
        reproducer(Curl(), BadRequest("c", b'{"a": "\x00"}'))
        == r"""printf '%b' '{"a": "\0000"}' | curl POST /v1/chat/completions body=None stream=False """
        r"""-H 'Content-Type: application/json' --data-binary @-"""
    )


@pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("bash") is None, reason="needs curl and bash"
)
@pytest.mark.parametrize("shell", ["bash", "sh"])
@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"text": "é 'q' %s \\"}, {"Content-Type": "application/json", "X-Case": "c"}),
        (b'{"text": "\xff\x00 \'q\' %s \\"}', {"Content-Type": "application/json", "X-Case": "c"}),
        (b'{"a": "\x00"}', {"Content-Type": "application/json", "X-Case": "c"}),
        (b"@etc/hostname", {"Content-Type": "application/json", "X-Case": "c"}),
        (b'{"a": 1}', {"X-Case": "c"}),
    ],
    ids=["utf8", "not-utf8", "nul", "at-sign", "no-content-type"],
)
def test_a_reproducer_run_in_a_shell_sends_the_same_request(server, body, headers, shell):
    """The point of a reproducer: curl delivers the very bytes and headers the test sent (the key from the environment),
    also for a body curl would read as a file name (``@...``), one with a NUL, and a request without Content-Type."""
    server.plan["/bad"] = answer(400, ENVELOPE)
    case = BadRequest("c", body, path="/bad", headers=headers)
    guard_of(server, api_key="sk-test").send(case)
    with InferClient(Endpoint(server.base_url, "tiny", "sk-test")) as client:
        line = reproducer(client, case)
    subprocess.run(
        [shell, "-c", line],
        env={**os.environ, "PYTEST_INFER_API_KEY": "sk-test"},
        check=True,
        capture_output=True,
        timeout=10,
    )
    (_, _, sent_headers, sent), (_, path, curl_headers, curled) = server.seen
    assert sent == case.content()
    assert (path, curled) == ("/bad", sent)
    for name in ("authorization", "content-type", "x-case"):
        assert curl_headers.get(name) == sent_headers.get(name)


# --- Guard.send: classification ----------------------------------------------------------------
def test_an_answer_carries_how_long_it_took(server):
    """An answer says how long the server took, as measured, not a default 0."""
    server.plan["/bad"] = late(0.3, answer(400, ENVELOPE))
    got = guard_of(server).send(BadRequest("c", b"{}", path="/bad"))
    assert got.kind == "4xx" and 0.3 <= got.seconds < PATIENT


@pytest.mark.parametrize(
    ("status", "kind"),
    [(200, "accepted"), (399, "accepted"), (400, "4xx"), (499, "4xx"), (500, "5xx"), (599, "5xx")],
)
def test_the_status_decides_the_kind(server, status, kind):
    server.plan["/bad"] = answer(status, b"no \xff")
    got = guard_of(server).send(BadRequest("c", b"{}", path="/bad"))
    assert (got.kind, got.status, got.text, got.error) == (kind, status, "no \ufffd", "")
    assert 0 <= got.seconds < PATIENT


def test_send_sends_the_case_bytes_its_headers_and_the_key(server):
    server.plan["/bad"] = answer(400, ENVELOPE)
    guard_of(server, api_key="sk-test").send(
        BadRequest(
            "c", b"\x00raw", path="/bad", headers={"Content-Type": "text/plain", "X-Case": "c"}
        )
    )
    [(method, path, headers, body)] = server.seen
    assert (method, path, body) == ("POST", "/bad", b"\x00raw")
    assert (headers["content-type"], headers["x-case"], headers["authorization"]) == (
        "text/plain",
        "c",
        "Bearer sk-test",
    )


def test_an_answer_in_parts_is_read_whole(server):
    server.plan["/bad"] = answer(200, b"first ", b"second", gap=0.05)
    assert guard_of(server).send(BadRequest("c", b"{}", path="/bad")).text == "first second"


def test_a_refused_stream_is_read_whole(server):
    server.plan["/bad"] = answer(400, b"first ", b"second", gap=0.05)
    got = guard_of(server).send(BadRequest("c", b"{}", path="/bad", stream=True))
    assert (got.kind, got.status, got.text) == ("4xx", 400, "first second")


def test_an_accepted_stream_is_left_after_its_first_bytes(server):
    """A wrongly accepted generation costs its first bytes, not its whole length."""
    server.plan["/bad"] = answer(200, b"data: {}\n\n", hold=True)
    got = guard_of(server).send(BadRequest("c", b"{}", path="/bad", stream=True))
    assert (got.kind, got.status, got.text, got.error) == ("accepted", 200, "data: {}\n\n", "")
    assert got.seconds < PATIENT


def test_a_stream_accepted_after_the_deadline_is_accepted_not_a_hang(server):
    server.plan["/bad"] = late(
        0.8, answer(200, b"data: {}\n\n", gap=0.8, hold=True)
    )  # each wait under the timeout, the first bytes past the deadline
    got = guard_of(server, timeout=1.5).send(BadRequest("c", b"{}", path="/bad", stream=True))
    assert (got.kind, got.status, got.text, got.error) == ("accepted", 200, "data: {}\n\n", "")


def test_a_stream_answered_300_is_read_until_the_deadline(server):
    """Only a 2xx stream counts as accepted on its first bytes: a 300 trickling past the deadline is a hang."""
    server.plan["/bad"] = answer(300, *[b"x"] * 40, gap=0.1)
    got = guard_of(server, timeout=SHORT).send(BadRequest("c", b"{}", path="/bad", stream=True))
    assert (got.kind, got.status, got.error) == ("hang", 300, "answer still arriving after 1s")
    assert 1 < len(got.text) < 40 and set(got.text) == {"x"}


def test_an_answer_trickling_past_the_deadline_is_a_hang_cut_at_the_deadline(server):
    """Each byte comes within the read timeout, so only the kit's own deadline stops the reading."""
    server.plan["/bad"] = answer(400, *[b"x"] * 40, gap=0.1)
    got = guard_of(server, timeout=SHORT).send(BadRequest("c", b"{}", path="/bad"))
    assert (got.kind, got.status, got.error) == ("hang", 400, "answer still arriving after 1s")
    assert 0 < len(got.text) < 40 and set(got.text) == {"x"}
    assert SHORT < got.seconds < 3.0  # not the 4 s the whole answer takes


def test_no_answer_within_the_timeout_is_a_hang(server):
    server.plan["/bad"] = late(3.0, answer(400, ENVELOPE))
    got = guard_of(server, timeout=SHORT).send(BadRequest("c", b"{}", path="/bad"))
    assert (got.kind, got.status, got.text, got.error) == ("hang", None, "", "ReadTimeout after 1s")
    assert SHORT <= got.seconds < 3.0


def test_reading_stops_at_the_cap_without_waiting_for_more(server):
    """The cap's exact size: the connection stays open after a megabyte, so reading one byte more would hang."""
    server.plan["/bad"] = answer(400, b"e" * MEGABYTE, hold=True)
    got = guard_of(server).send(BadRequest("c", b"{}", path="/bad"))
    assert (got.kind, got.status, len(got.text), got.error) == ("4xx", 400, MEGABYTE, "")


def test_a_larger_answer_is_cut_at_the_cap(server):
    server.plan["/bad"] = answer(400, b"e" * (3 * MEGABYTE))
    assert len(guard_of(server).send(BadRequest("c", b"{}", path="/bad")).text) == MEGABYTE


def test_a_dropped_connection_while_the_server_answers_is_dropped(server):
    server.plan["/bad"] = drop
    got = guard_of(server).send(BadRequest("c", b"{}", path="/bad"))
    assert (got.kind, got.status, got.text, got.error) == ("dropped", None, "", DISCONNECTED)
    assert 0 <= got.seconds < PATIENT


def test_a_dropped_connection_of_an_exited_process_is_death(server):
    server.plan["/bad"] = drop
    got = guard_of(server, running=False).send(BadRequest("c", b"{}", path="/bad"))
    assert (got.kind, got.status, got.text, got.error) == ("death", None, "", DISCONNECTED)


def test_a_dropped_connection_is_death_when_the_port_no_longer_answers(server):
    server.plan = {"/bad": drop, "/v1/models": drop}
    assert guard_of(server).send(BadRequest("c", b"{}", path="/bad")).kind == "death"


# --- known_good, completion_problem, stream_problem ----------------------------------------------
def test_the_known_good_request_of_each_route():
    hello = [{"role": "user", "content": "Hello"}]
    assert known_good("/v1/chat/completions", "m") == {
        "model": "m",
        "messages": hello,
        "max_tokens": 4,
        "temperature": 0,
    }
    assert known_good("/v1/completions", "m", stream=True) == {
        "model": "m",
        "prompt": "Hello",
        "max_tokens": 4,
        "temperature": 0,
        "stream": True,
    }
    assert known_good("/v1/embeddings", "m") is None


CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


@pytest.mark.parametrize(
    ("path", "status", "text", "problem"),
    [
        (CHAT, 200, COMPLETION.decode(), None),
        (
            CHAT,
            200,
            '{"choices": [{"message": {"content": ""}}]}',
            None,
        ),  # an empty answer is still an answer
        (COMPLETIONS, 200, '{"choices": [{"text": "Hi"}]}', None),
        ("/v1/other", 200, '{"anything": 1}', None),
        (
            "/v1/responses",
            200,
            '{"object": "response", "id": "r", "error": null}',
            None,
        ),  # a Responses object's own field
        (CHAT, 404, "n" * 400, "HTTP 404: " + "n" * 300),
        (CHAT, 200, "Hi", "HTTP 200 but the body is not JSON: 'Hi'"),
        (CHAT, 200, "[]", "HTTP 200 but the body is not a JSON object: '[]'"),
        (
            "/v1/other",
            200,
            '{"error": {"message": "m"}}',
            'HTTP 200 with an error body: \'{"error": {"message": "m"}}\'',
        ),
        (CHAT, 200, "{}", "HTTP 200 without choices: '{}'"),
        (CHAT, 200, '{"choices": []}', "HTTP 200 without choices: '{\"choices\": []}'"),
        (CHAT, 200, '{"choices": {"0": 1}}', 'HTTP 200 without choices: \'{"choices": {"0": 1}}\''),
        (CHAT, 200, '{"choices": [1]}', "HTTP 200 but choices[0] is not an object: 1"),
        (
            CHAT,
            200,
            '{"choices": [{"text": "Hi"}]}',
            "HTTP 200 but choices[0].message is not an object: None",
        ),
        (
            CHAT,
            200,
            '{"choices": [{"message": {"content": null}}]}',
            "HTTP 200 but choices[0].message.content is not a string: None",
        ),
        (
            CHAT,
            200,
            '{"choices": [{"message": {"content": ["Hi"]}}]}',
            "HTTP 200 but choices[0].message.content is not a string: ['Hi']",
        ),
        (
            COMPLETIONS,
            200,
            COMPLETION.decode(),
            "HTTP 200 but choices[0].text is not a string: None",
        ),
    ],
)
def test_completion_problem_names_what_is_not_an_answer(path, status, text, problem):
    assert completion_problem(path, status, text) == problem


def chunks(*choices: object) -> list[dict]:
    return [{"choices": [choice]} for choice in choices]


@pytest.mark.parametrize(
    ("path", "stream", "problem"),
    [
        (
            CHAT,
            SSEStream(
                200,
                {},
                "raw",
                chunks={"choices": []}
                and chunks({"delta": {"role": "assistant"}}, {"delta": {"content": "Hi"}}),
                done=True,
            ),
            None,
        ),
        (
            COMPLETIONS,
            SSEStream(200, {}, "raw", chunks=chunks({"text": "H"}, {"text": "i"}), done=True),
            None,
        ),
        (CHAT, SSEStream(429, {}, "s" * 400), "HTTP 429: " + "s" * 300),
        (
            CHAT,
            SSEStream(200, {}, "{}", problems=["a", "b", "c", "d"]),
            "HTTP 200 but the stream is broken: a; b; c",
        ),
        (
            CHAT,
            SSEStream(200, {}, "raw", chunks=[{"choices": []}, {"usage": {}}]),
            "HTTP 200 but no chunk carries a choice: 'raw'",
        ),
        (
            CHAT,
            SSEStream(
                200,
                {},
                "raw",
                chunks=chunks({"delta": {"content": "Hi"}}, {"message": {"content": "Hi"}}),
            ),
            "HTTP 200 but a chunk's choices[0].delta is not an object: None",
        ),
        (
            CHAT,
            SSEStream(200, {}, "raw", chunks=chunks({"delta": {"content": 1}})),
            "HTTP 200 but a chunk's choices[0].delta.content is not a string: 1",
        ),
        (
            CHAT,
            SSEStream(200, {}, "raw", chunks=chunks({"delta": {}}, {"delta": {"content": None}})),
            "HTTP 200 but no chunk carries delta.content: 'raw'",
        ),
        (
            COMPLETIONS,
            SSEStream(200, {}, "raw", chunks=chunks({"text": "H"}, {"delta": {"content": "i"}})),
            "HTTP 200 but a chunk's choices[0].text is not a string: None",
        ),
    ],
    ids=[
        "chat",
        "completions",
        "refused",
        "broken",
        "no-choice",
        "no-delta",
        "content-not-text",
        "no-content",
        "no-text",
    ],
)
def test_stream_problem_names_what_is_not_a_streamed_answer(path, stream, problem):
    assert stream_problem(path, stream) == problem


# --- Guard.serves, Guard.control ------------------------------------------------------------------
def test_serves_reads_a_stream_to_its_end_and_judges_it(server):
    server.plan["/v1/chat/completions"] = sse(CHUNK, b"data: [DONE]\n\n")
    assert guard_of(server).serves(BadRequest("c", {}, stream=True)) is None
    server.plan["/v1/chat/completions"] = sse(CHUNK)
    assert (
        guard_of(server).serves(BadRequest("c", {}, stream=True))
        == "HTTP 200 but the stream is broken: the stream does not end with 'data: [DONE]'"
    )


def test_serves_caps_the_answer_it_reads(server):
    server.plan["/v1/chat/completions"] = answer(200, b"e" * (2 * MEGABYTE), hold=True)
    with pytest.raises(httpx.ReadError, match="exceeded 1048576 bytes"):
        guard_of(server).serves(BadRequest("c", {}))


CONTROL_OF_BAD = "curl POST /bad body=None stream=False -H 'Content-Type: application/json' --data-raw '{\"n\": 1}'"


def test_a_served_control_sends_the_known_good_request_of_the_route_and_counts_nothing(server):
    server.plan["/v1/completions"] = sse(
        b'data: {"choices": [{"text": "Hi"}]}\n\n', b"data: [DONE]\n\n"
    )
    guard = guard_of(server)
    guard.control(Curl(), BadRequest("c", {"prompt": 1}, path="/v1/completions", stream=True))
    [(method, path, _, body)] = server.seen
    assert (method, path, json.loads(body)) == (
        "POST",
        "/v1/completions",
        known_good("/v1/completions", "tiny", stream=True),
    )
    assert guard.tally == {}


def test_a_control_given_by_the_case_is_sent_instead(server):
    server.plan["/bad"] = unless_control(answer(400, ENVELOPE))
    guard_of(server).control(Curl(), BAD)
    assert [(path, body) for _, path, _, body in server.seen] == [("/bad", GOOD)]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (answer(200, b"[]"), "HTTP 200 but the body is not a JSON object: '[]'"),
        (answer(404, ENVELOPE), "HTTP 404: " + ENVELOPE.decode()),
        (drop, DISCONNECTED),
        (late(3.0, answer(200, b'{"ok": 1}')), "no answer: ReadTimeout after 1s"),
    ],
    ids=["wrong-answer", "refused", "dropped", "hang"],
)
def test_a_control_not_served_makes_the_case_inconclusive_naming_it_and_its_curl(
    server, reply, why
):
    server.plan["/bad"] = reply
    guard = guard_of(server, timeout=SHORT)
    with pytest.raises(Inconclusive) as inconclusive:
        guard.control(Curl(), BAD)
    assert (
        str(inconclusive.value)
        == "inconclusive: t1: bad request 'bad' not judged: its positive control (the same request without the fault)"
        f" was not answered correctly: {why}\ncontrol: {CONTROL_OF_BAD}"
    )
    assert guard.tally == {} and guard.down is None


def test_a_case_at_a_route_without_a_known_good_request_is_inconclusive_unasked(server):
    with pytest.raises(
        Inconclusive,
        match=(
            r"^inconclusive: t1: bad request 'c': no known-good request for /v1/embeddings to show it is served \(give"
            r" the BadRequest a control\)$"
        ),
    ):
        guard_of(server).control(Curl(), BadRequest("c", {}, path="/v1/embeddings"))
    assert server.seen == []


# --- reachable, health, require_up -------------------------------------------------------------
def test_an_exited_process_is_unreachable_without_asking_the_port(server):
    assert guard_of(server, running=False).reachable() is False
    assert server.seen == []


@pytest.mark.parametrize(
    ("models", "reachable"),
    [(answer(200, b'{"data": []}'), True), (answer(500, b"<html>"), True), (drop, False)],
)
def test_reachable_means_the_port_answers_at_all(server, models, reachable):
    server.plan["/v1/models"] = models
    assert guard_of(server).reachable() is reachable
    assert [(method, path) for method, path, _, _ in server.seen] == [("GET", "/v1/models")]


def test_reachable_waits_5s_for_the_models_list(server, monkeypatch):
    asked = []
    monkeypatch.setattr(
        Endpoint, "models", lambda self, *args, **kwargs: asked.append((args, kwargs)) or []
    )
    assert guard_of(server, timeout=30.0).reachable() is True
    assert asked == [((), {"timeout": 5.0})]


def test_health_sends_a_small_chat_with_the_key_and_clears_down(server):
    guard = guard_of(server, api_key="sk-test")
    guard.down = "earlier"
    assert guard.health() is None
    assert guard.down is None and guard.tally == {}
    [(method, path, headers, body)] = server.seen
    assert (method, path, headers["authorization"]) == (
        "POST",
        "/v1/chat/completions",
        "Bearer sk-test",
    )
    assert json.loads(body) == {
        "model": "tiny",
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 4,
        "temperature": 0,
    }


def test_health_refused_is_a_wedge_with_the_start_of_the_answer(server):
    server.plan["/v1/chat/completions"] = answer(503, b"b" * 400)
    guard = guard_of(server)
    reason = "a normal request got HTTP 503: " + "b" * 300
    assert guard.health() == reason
    assert (guard.down, guard.tally) == (reason, {"wedged": 1})


@pytest.mark.parametrize(
    ("reply", "got"),
    [
        (answer(200, b"{}", content_type="application/json"), "HTTP 200 without choices: '{}'"),
        (answer(200, b'{"error": "x"}'), 'HTTP 200 with an error body: \'{"error": "x"}\''),
    ],
    ids=["empty-object", "error-body"],
)
def test_health_answered_without_a_completion_is_a_wedge(server, reply, got):
    """Survival is a correct answer, not any answer: HTTP 200 with ``{}`` serves nobody."""
    server.plan["/v1/chat/completions"] = reply
    guard = guard_of(server)
    assert guard.health() == f"a normal request got {got}"
    assert (guard.down, guard.tally) == (f"a normal request got {got}", {"wedged": 1})


def test_health_without_an_answer_is_a_wedge_after_the_guard_timeout(server):
    server.plan["/v1/chat/completions"] = late(3.0, answer(200, b"{}"))
    guard = guard_of(server, timeout=SHORT)
    assert guard.health() == "a normal request got no answer within 1s"
    assert guard.tally == {"wedged": 1}


def test_health_waits_the_timeout_it_is_given(server):
    server.plan["/v1/chat/completions"] = late(3.0, answer(200, b"{}"))
    guard = guard_of(server, timeout=PATIENT)
    assert guard.health(timeout=SHORT) == "a normal request got no answer within 1s"
    assert guard.tally == {"wedged": 1}


def test_health_dropped_by_a_reachable_server_is_a_wedge(server):
    server.plan["/v1/chat/completions"] = drop
    guard = guard_of(server)
    assert guard.health() == f"a normal request failed: {DISCONNECTED}"
    assert guard.tally == {"wedged": 1}


def test_health_dropped_by_an_exited_process_is_a_death(server):
    server.plan["/v1/chat/completions"] = drop
    guard = guard_of(server, running=False)
    assert guard.health() == f"the server is gone ({DISCONNECTED})"
    assert (guard.down, guard.tally) == (f"the server is gone ({DISCONNECTED})", {"deaths": 1})


def test_a_loss_is_counted_once_until_the_server_recovers(server):
    guard = guard_of(server)
    server.plan["/v1/chat/completions"] = answer(503, b"busy")
    guard.health()
    server.plan["/v1/chat/completions"] = drop
    assert guard.health() == f"a normal request failed: {DISCONNECTED}"
    assert (guard.down, guard.tally) == (f"a normal request failed: {DISCONNECTED}", {"wedged": 1})
    server.plan["/v1/chat/completions"] = answer(200, COMPLETION)
    assert guard.health() is None and guard.down is None
    server.plan["/v1/chat/completions"] = answer(503, b"busy")
    guard.health()
    assert guard.tally == {"wedged": 2}


def test_count_adds_to_a_counter_from_zero():
    guard = Guard("t1", Process(), Endpoint("http://127.0.0.1:9"), {"4xx": 1})
    guard.count("tried")
    guard.count("tried", 3)
    assert guard.tally == {"4xx": 1, "tried": 4}


def test_require_up_asks_nothing_while_the_server_is_up(server):
    guard_of(server).require_up()
    assert server.seen == []


def test_require_up_passes_once_the_server_serves_again(server):
    guard = guard_of(server)
    guard.down = "earlier"
    guard.require_up()
    assert guard.down is None
    assert [(method, path) for method, path, _, _ in server.seen] == [
        ("POST", "/v1/chat/completions")
    ]


def test_require_up_fails_fast_with_why_and_counts_nothing_more(server):
    server.plan["/v1/chat/completions"] = answer(503, b"busy")
    guard = guard_of(server)
    guard.down, guard.tally["wedged"] = "earlier", 1
    with pytest.raises(pytest.fail.Exception) as failed:
        guard.require_up()
    assert (
        str(failed.value)
        == "t1: server unusable since an earlier test: a normal request got HTTP 503: busy"
    )
    assert failed.value.pytrace is False
    assert guard.tally == {"wedged": 1}


@pytest.mark.parametrize(("timeout", "recheck"), [(30.0, 5.0), (SHORT, SHORT)])
def test_require_up_rechecks_within_5s_at_most(server, monkeypatch, timeout, recheck):
    guard = guard_of(server, timeout=timeout)
    guard.down = "earlier"
    asked = []
    monkeypatch.setattr(guard, "health", lambda timeout=None: asked.append(timeout))
    guard.require_up()
    assert asked == [recheck]


# --- Guard.expect_rejected ---------------------------------------------------------------------
BAD = BadRequest("bad", {"n": -1}, path="/bad", control={"n": 1})
REPRODUCER = "curl POST /bad body=None stream=False -H 'Content-Type: application/json' --data-raw '{\"n\": -1}'"
REPRODUCE = "\nreproduce: " + REPRODUCER


def rejected_failure(guard: Guard, record: Record | None = None) -> pytest.fail.Exception:
    with pytest.raises(pytest.fail.Exception) as failed:
        guard.expect_rejected(Curl(), BAD, record)
    assert failed.value.pytrace is False
    return failed.value


def test_a_refusal_with_the_envelope_passes_and_records_what_it_judged_not_a_reproducer(server):
    server.plan["/bad"] = unless_control(answer(400, ENVELOPE))
    guard, record = guard_of(server), Record()
    got = guard.expect_rejected(Curl(), BAD, record)
    assert (got.kind, got.status, got.text, got.error) == ("4xx", 400, ENVELOPE.decode(), "")
    assert (guard.tally, guard.down) == ({"tried": 1, "4xx": 1}, None)
    assert record == [
        (
            "infer_evidence",
            "POST /bad: the same request without the fault answered correctly; bad got HTTP 400 with the error envelope"
            " ('n must be positive'); a normal request was answered correctly after it",
        )
    ]
    assert [(path, body) for _, path, _, body in server.seen[:2]] == [
        ("/bad", GOOD),
        ("/bad", b'{"n": -1}'),
    ]  # control first
    assert [path for _, path, _, _ in server.seen[2:]] == [
        "/v1/chat/completions"
    ]  # the health check after it


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"Bad Request", "the body is not JSON"),
        (b"[1]", "no 'error' object (top-level keys: list)"),
        (b'{"detail": "n", "code": 1}', "no 'error' object (top-level keys: ['code', 'detail'])"),
        (b'{"error": {"message": ""}}', "error.message is not a non-empty string"),
        (b'{"error": {"message": "m"}}', "error.type is missing"),
    ],
)
def test_a_refusal_without_the_envelope_fails_saying_why(server, body, why):
    server.plan["/bad"] = unless_control(answer(422, body))
    guard, record = guard_of(server), Record()
    failure = rejected_failure(guard, record)
    assert (
        str(failure)
        == f"t1: bad request 'bad': HTTP 422 without the error envelope: {why}; body: {body.decode()!r}"
        + REPRODUCE
    )
    assert (guard.tally, record) == ({"tried": 1, "4xx": 1}, [("infer_reproducer", REPRODUCER)])


def test_a_refusal_without_the_envelope_shows_its_first_300_characters(server):
    server.plan["/bad"] = unless_control(answer(400, b"x" * 400))
    failure = rejected_failure(guard_of(server))
    assert (
        str(failure)
        == "t1: bad request 'bad': HTTP 400 without the error envelope: the body is not JSON; body: '"
        + "x" * 300
        + "'"
        + REPRODUCE
    )


@pytest.mark.parametrize(
    ("status", "said", "shown", "counted"),
    [
        (200, "accepted with HTTP 200 instead of a 4xx; body starts: ", 200, "accepted"),
        (503, "HTTP 503 (a server error for bad input: clients retry 5xx); body: ", 300, "5xx"),
    ],
    ids=["accepted", "server-error"],
)
def test_a_bad_request_not_refused_fails_with_the_start_of_the_answer(
    server, status, said, shown, counted
):
    server.plan["/bad"] = unless_control(answer(status, b"y" * 400))
    guard, record = guard_of(server), Record()
    failure = rejected_failure(guard, record)
    assert str(failure) == f"t1: bad request 'bad': {said}'" + "y" * shown + "'" + REPRODUCE
    assert (guard.tally, record) == ({"tried": 1, counted: 1}, [("infer_reproducer", REPRODUCER)])


def test_no_answer_fails_as_a_hang(server):
    server.plan["/bad"] = unless_control(late(3.0, answer(400, ENVELOPE)))
    guard = guard_of(server, timeout=2.0)  # the health check after it gets this long too
    failure = rejected_failure(guard)
    assert str(failure) == "t1: bad request 'bad': no answer: ReadTimeout after 2s" + REPRODUCE
    assert (guard.tally, guard.down) == ({"tried": 1, "hangs": 1}, None)


def test_a_dropped_connection_fails_as_dropped(server):
    server.plan["/bad"] = unless_control(drop)
    guard = guard_of(server)
    failure = rejected_failure(guard)
    assert (
        str(failure)
        == f"t1: bad request 'bad': connection dropped without an answer: {DISCONNECTED}"
        + REPRODUCE
    )
    assert (guard.tally, guard.down) == ({"tried": 1, "dropped": 1}, None)


def test_a_death_fails_once_counted_and_leaves_the_target_down(server):
    server.plan = {"/bad": unless_control(drop), "/v1/chat/completions": drop}
    guard, record = guard_of(server, running=False), Record()
    failure = rejected_failure(guard, record)
    assert str(failure) == (
        f"t1: bad request 'bad': connection lost, server dead: {DISCONNECTED}; and afterwards the server is unusable:"
        f" the server is gone ({DISCONNECTED})" + REPRODUCE
    )
    assert (guard.tally, guard.down) == (
        {"tried": 1, "deaths": 1},
        f"the server is gone ({DISCONNECTED})",
    )
    assert record == [("infer_reproducer", REPRODUCER)]


def test_a_refusal_that_wedges_the_server_fails_for_the_wedge(server):
    server.plan["/bad"] = unless_control(answer(400, ENVELOPE))
    server.plan["/v1/chat/completions"] = answer(503, b"overloaded")
    guard, record = guard_of(server), Record()
    failure = rejected_failure(guard, record)
    assert (
        str(failure)
        == "t1: bad request 'bad': and afterwards the server is unusable: a normal request got HTTP 503: overloaded"
        + REPRODUCE
    )
    assert (guard.tally, guard.down) == (
        {"tried": 1, "4xx": 1, "wedged": 1},
        "a normal request got HTTP 503: overloaded",
    )
    assert record == [("infer_reproducer", REPRODUCER)]


def test_a_target_left_down_fails_before_sending_anything(server):
    server.plan["/v1/chat/completions"] = answer(503, b"busy")
    guard = guard_of(server)
    guard.down = "earlier"
    with pytest.raises(
        pytest.fail.Exception,
        match=r"^t1: server unusable since an earlier test: a normal request got HTTP 503: busy$",
    ):
        guard.expect_rejected(Curl(), BAD, Record())
    assert guard.tally == {}
    assert [path for _, path, _, _ in server.seen] == ["/v1/chat/completions"]


def test_a_case_whose_control_is_not_served_is_inconclusive_and_never_sent(server):
    server.plan["/bad"] = answer(404, ENVELOPE)  # refuses everything, the control too
    guard = guard_of(server)
    with pytest.raises(
        Inconclusive, match=r"its positive control .* was not answered correctly: HTTP 404"
    ):
        guard.expect_rejected(Curl(), BAD, Record())
    assert guard.tally == {}
    assert [(path, body) for _, path, _, body in server.seen] == [("/bad", GOOD)]
