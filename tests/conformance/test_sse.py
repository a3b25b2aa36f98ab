"""The strict SSE reader reports the framing faults a forgiving decoder would swallow."""

from __future__ import annotations

import httpx
import pytest

from pytest_infer.client.sse import framing_problems, read_sse


def _read(body: bytes, content_type: str = "text/event-stream") -> object:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": content_type}, content=body)
    )
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", "http://sse.test/") as resp,
    ):
        return read_sse(resp)


def test_a_well_formed_stream_has_no_problems() -> None:
    stream = _read(b'data: {"a": 1}\n\ndata: {"a": 2}\n\ndata: [DONE]\n\n')
    assert stream.problems == [] and stream.done
    assert [c["a"] for c in stream.chunks] == [1, 2]
    assert [e.data for e in stream.events][-1] == "[DONE]"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'data: {"a": 1}\n\n', "does not end with 'data: [DONE]'"),
        (b'{"a": 1}\n\ndata: [DONE]\n\n', "not an SSE field"),
        (b'data: {"a": 1}\n\ndata: [DONE]', "ends inside an event"),
        (b"data: not json\n\ndata: [DONE]\n\n", "is not JSON"),
        (b'data: [DONE]\n\ndata: {"a": 1}\n\n', "after 'data: [DONE]'"),
        (b"", "the stream is empty"),
    ],
)
def test_framing_faults_are_reported(body: bytes, problem: str) -> None:
    stream = _read(body)
    assert any(problem in p for p in stream.problems), stream.problems


def test_a_wrong_content_type_is_reported_and_the_body_still_read() -> None:
    stream = _read(b'data: {"a": 1}\n\ndata: [DONE]\n\n', "application/json")
    assert any("Content-Type" in p for p in stream.problems)
    assert stream.chunks == [{"a": 1}]


def test_comments_and_crlf_are_valid_framing() -> None:
    assert framing_problems(': keep-alive\r\n\r\ndata: {"a": 1}\r\n\r\n') == []


def test_an_error_status_keeps_the_body() -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(400, json={"error": {"message": "bad"}})
    )
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", "http://sse.test/") as resp,
    ):
        stream = read_sse(resp)
    assert stream.status == 400 and stream.json()["error"]["message"] == "bad" and not stream.events
