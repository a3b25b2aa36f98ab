"""The plugin under faults: a misbehaving server fails the one test that meets it, clearly and in time.

Each test runs a small session (pytester) against the programmable fake server
made wrong for exactly one request (its prompt says FAULT), and checks: the
affected test fails with a message that names the fault, within the request
timeout; the tests before and after it pass; results.json and the JUnit file
hold every test; no process is left behind.
"""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator

import httpcore  # noqa: F401  imported here, outside the in-process runs: pytester drops modules an inner run
import psutil  # imported first, and httpx's cached map of httpcore errors would then miss the re-imported classes
import pytest

from pytest_infer.testing.fakeserver import Deviation, FakeServer

REQUEST_TIMEOUT = (
    3.0  # short, yet long enough for a loaded 2-core CI machine to answer a normal request
)
SESSION = """
from pytest_infer.client.sse import read_sse

def test_1_before(infer_client):
    infer_client.chat_completion("hi", max_tokens=2)

def test_2_affected(infer_client):
    {affected}

def test_3_after(infer_client):
    infer_client.chat_completion("hi", max_tokens=2)

def test_4_after_stream(infer_client):
    with infer_client.stream("POST", "/v1/chat/completions",
                             json={{"model": infer_client.model, "stream": True, "max_tokens": 4,
                                   "messages": [{{"role": "user", "content": "hi"}}]}}) as resp:
        stream = read_sse(resp)
    assert not stream.problems, stream.problems
"""
NON_STREAMED = 'infer_client.chat_completion("FAULT", max_tokens=8)'
STREAMED = """with infer_client.stream("POST", "/v1/chat/completions",
                             json={"model": infer_client.model, "stream": True, "max_tokens": 8,
                                   "messages": [{"role": "user", "content": "FAULT"}]}) as resp:
        stream = read_sse(resp)
    assert not stream.problems, "; ".join(stream.problems)"""


def faulty(body: dict) -> bool:
    return "FAULT" in json.dumps(body)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so a deliberately hanging handler thread ends with the test."""
    event = threading.Event()
    yield event
    event.set()


def run_session(
    pytester: pytest.Pytester, deviation: Deviation, affected: str
) -> tuple[pytest.RunResult, dict]:
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    pytester.makepyfile(test_session=SESSION.format(affected=affected))
    with FakeServer(deviation) as srv:
        result = pytester.runpytest(
            f"--infer-endpoint={srv.base_url}",
            f"--infer-request-timeout={REQUEST_TIMEOUT}",
            "-p",
            "no:cacheprovider",
            "--junitxml=junit.xml",
        )
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in children_before]
    assert not left, f"processes left behind: {left}"
    return result, results


def assert_only_affected_failed(
    result: pytest.RunResult, results: dict, pytester: pytest.Pytester, message: str
) -> dict:
    """The affected test failed with ``message``, the others passed, every report lists them all; returns its record."""
    result.assert_outcomes(passed=3, failed=1)
    outcomes = {t["nodeid"].split("::")[1].split("[")[0]: t["outcome"] for t in results["tests"]}
    assert outcomes == {
        "test_1_before": "passed",
        "test_2_affected": "failed",
        "test_3_after": "passed",
        "test_4_after_stream": "passed",
    }
    affected = next(t for t in results["tests"] if "test_2_affected" in t["nodeid"])
    assert message in affected["message"], affected["message"]
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    assert sorted(c.get("name").split("[")[0] for c in cases) == sorted(outcomes)
    result.stdout.fnmatch_lines(["*" + message.replace("[", "[[]") + "*"])
    return affected


def assert_within_timeout(affected: dict) -> None:
    """A hang costs the affected test about one request timeout (twice at most: headers, then body), not more."""
    assert affected["duration"] < 2 * REQUEST_TIMEOUT + 3, (
        f"the fault cost {affected['duration']:.1f}s; the request timeout is {REQUEST_TIMEOUT}s"
    )


def events_fault(change: Callable[[list], list]) -> Deviation:
    return Deviation(events=lambda path, body, events: change(events) if faulty(body) else events)


FAULTS_IN_EVENTS = {
    "malformed_sse": (
        lambda ev: ev[:2] + [b"this line is no SSE field\n\n", "{not json"] + ev[2:],
        "is not an SSE field",
    ),
    "truncated_without_done": (lambda ev: ev[:3], "does not end with 'data: [DONE]'"),
    "event_cut_in_half": (
        lambda ev: ev[:2] + [b'data: {"id": "x", "obj'],
        "the stream ends inside an event",
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS_IN_EVENTS))
def test_broken_stream_fails_only_its_test(pytester, fault):
    change, message = FAULTS_IN_EVENTS[fault]
    result, results = run_session(pytester, events_fault(change), STREAMED)
    assert_within_timeout(assert_only_affected_failed(result, results, pytester, message))


def test_http_200_with_an_error_body(pytester):
    deviation = Deviation(
        response=lambda path, body, resp: (
            {"error": {"message": "CUDA out of memory", "type": "server_error"}}
            if faulty(body)
            else resp
        )
    )
    result, results = run_session(pytester, deviation, NON_STREAMED)
    assert_only_affected_failed(result, results, pytester, "HTTP 200 with an error body")


def test_hang_before_the_response(pytester, release):
    deviation = Deviation(
        request=lambda path, body: release.wait(60) and None if faulty(body) else None
    )
    result, results = run_session(pytester, deviation, NON_STREAMED)
    assert_within_timeout(assert_only_affected_failed(result, results, pytester, "ReadTimeout"))


def _stream_then(handler, body: dict, after_two: Callable[[Callable[[bytes], None]], None]) -> None:
    """Answer normally unless FAULT: then send headers and two events, and hand the socket's writer on."""
    events = (
        handler._chat(body)
        if handler.path.endswith("/chat/completions")
        else handler._completions(body)
    )
    if not faulty(body):
        return (
            handler._send_json(200, events)
            if isinstance(events, dict)
            else handler._send_events(events)
        )
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    handler.close_connection = True

    def write(data: bytes) -> None:
        handler.wfile.write(data)
        handler.wfile.flush()

    for event in events[:2]:
        write(f"data: {json.dumps(event)}\n\n".encode())
    try:
        after_two(write)
    except (BrokenPipeError, ConnectionResetError):
        pass


def test_hang_during_a_stream(pytester, release):
    deviation = Deviation(
        raw_stream=lambda path, body, handler: _stream_then(
            handler, body, lambda write: release.wait(60)
        )
    )
    result, results = run_session(pytester, deviation, STREAMED)
    assert_within_timeout(
        assert_only_affected_failed(result, results, pytester, "the stream broke off: ReadTimeout")
    )


def test_trickling_stream_is_cut_at_the_request_timeout(pytester, release):
    """A byte every 0.2 s never trips a read timeout; the client's total deadline must."""

    def trickle(write):
        while not release.wait(0.2):
            write(b": keep-alive\n\n")

    deviation = Deviation(
        raw_stream=lambda path, body, handler: _stream_then(handler, body, trickle)
    )
    result, results = run_session(pytester, deviation, STREAMED)
    assert_within_timeout(assert_only_affected_failed(result, results, pytester, "still arriving"))


def test_gigabyte_response_is_cut_off(pytester):
    """A 1 GiB answer (declared and sent): the client stops at its size limit; memory stays bounded."""

    def gigabyte(path, body, handler):
        if not faulty(body):
            answer = handler._chat(body)
            return (
                handler._send_json(200, answer)
                if isinstance(answer, dict)
                else handler._send_events(answer)
            )
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(1 << 30))
        handler.end_headers()
        block = b" " * (1 << 20)
        try:
            for _ in range(1024):
                handler.wfile.write(block)
        except (BrokenPipeError, ConnectionResetError):
            pass

    rss_before = psutil.Process().memory_info().rss
    result, results = run_session(pytester, Deviation(raw_stream=gigabyte), NON_STREAMED)
    affected = assert_only_affected_failed(result, results, pytester, "the response exceeded")
    assert psutil.Process().memory_info().rss - rss_before < 400 << 20, (
        "the answer was held in memory"
    )
    assert affected["duration"] < 30, "reading stopped at the size limit, long before a gigabyte"
