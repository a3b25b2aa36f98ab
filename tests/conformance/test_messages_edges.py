"""The messages checks at the edges a correct fake server never shows: a server that answers a message but refuses
to stream one, and a reasoning model's thinking block, whose deltas carry no text."""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import Unsupported
from pytest_infer.testing.fakeserver import FakeServer, error_body

from .deviations import MESSAGES, answer_when, answers, chain, compose, on_events, on_response

THINKING = {"type": "thinking", "thinking": "let me think", "signature": "c2ln"}


def test_a_refused_message_stream_is_unsupported_messages(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A server without streamed messages lacks part of the Messages API: the report files it under "messages"."""
    fake.set_deviation(
        compose(
            answer_when(
                lambda p, b: p == MESSAGES and b.get("stream"),
                501,
                error_body("streaming is not supported"),
            )
        )
    )
    with pytest.raises(Unsupported) as info:
        conformance.run("messages.stream-events", ctx)
    assert info.value.feature == "messages"
    assert info.value.msg.startswith("unsupported: messages: the server refuses it: HTTP 501: "), (
        info.value.msg
    )


def _thinking_first(body: dict, events: list) -> list:
    """A thinking block at index 0 (thinking and signature deltas, no text), the text block moved to index 1."""
    moved = [{**e, "index": e["index"] + 1} if "index" in e else e for e in events]
    thinking = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": THINKING["thinking"]},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": THINKING["signature"]},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    return moved[:1] + thinking + moved[1:]


def test_stream_text_leaves_out_a_thinking_block(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A reasoning model streams its thought as deltas without text; the message's text is only its text blocks."""
    think = on_response(lambda p, b, r: r.update(content=[THINKING, *r["content"]]), path=MESSAGES)
    fake.set_deviation(compose(chain(think, on_events(_thinking_first, path=MESSAGES))))
    with answers():
        conformance.run("messages.stream-events", ctx)
