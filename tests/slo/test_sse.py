"""The client's hot path: incremental SSE parsing and the token count of a chunk."""

from __future__ import annotations

import json

import pytest

from pytest_infer.load.sse_parser import SSEParser, chunk_output

STREAM = (
    b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
    b": a comment line\n\n"
    b'data: {"choices":[{"delta":{"content":"Hel"}}]}\r\n\r\n'
    b"event: ignored-field\ndata: line one\ndata: line two\n\n"
    b'data: {"choices":[],"usage":{"completion_tokens":2}}\r\r'
    b"data: [DONE]\n\n"
)
EXPECTED = [
    b'{"choices":[{"delta":{"role":"assistant","content":""}}]}',
    b'{"choices":[{"delta":{"content":"Hel"}}]}',
    b"line one\nline two",
    b'{"choices":[],"usage":{"completion_tokens":2}}',
    b"[DONE]",
]


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_events_survive_any_split_into_two_reads(cut):
    parser = SSEParser()
    assert parser.feed(STREAM[:cut]) + parser.feed(STREAM[cut:]) == EXPECTED


def test_byte_at_a_time():
    parser = SSEParser()
    assert [e for i in range(len(STREAM)) for e in parser.feed(STREAM[i : i + 1])] == EXPECTED


def test_an_unterminated_last_event_is_not_dispatched():
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]") == [] and parser.close() == []


def chat(delta, **choice):
    return {"choices": [{"index": 0, "delta": delta, **choice}]}


@pytest.mark.parametrize(
    ("chunk", "tokens"),
    [
        (chat({"role": "assistant", "content": ""}), 0),  # vLLM's role-only first chunk
        (chat({"role": "assistant"}), 0),  # transformers serve's
        (chat({}, finish_reason="stop"), 0),
        ({"choices": [], "usage": {"completion_tokens": 3}}, 0),
        (chat({"content": "a"}), 1),
        (chat({"reasoning_content": "hmm"}), 1),
        (chat({"reasoning": "hmm"}), 1),
        (chat({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ""}}]}), 0),
        (chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"x"'}}]}), 1),
        (chat({"content": "abc"}, token_ids=[1, 2, 3]), 3),  # vLLM return_token_ids
        (chat({"content": "ab"}, logprobs={"content": [{"token": "a"}, {"token": "b"}]}), 2),
        (
            {"choices": [{"index": 0, "text": "xy", "logprobs": {"tokens": ["x", "y"]}}]},
            2,
        ),  # completions
        ({"choices": [{"index": 0, "text": ""}]}, 0),
        ({"choices": [{"index": 0, "text": "x"}, {"index": 1, "text": "y"}]}, 2),  # n=2
    ],
)
def test_chunk_output_counts_generated_tokens_only(chunk, tokens):
    assert chunk_output(json.loads(json.dumps(chunk))) == tokens
