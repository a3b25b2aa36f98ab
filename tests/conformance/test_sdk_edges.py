"""The sdk checks at the edges a correct fake server never shows: a valid answer it never sends (no usage, two
text blocks, embeddings that differ within the tolerance), the seeds a retry sends, and what a check that gives
up then says."""

from __future__ import annotations

import base64
import struct

from pytest_infer import conformance
from pytest_infer.testing.fakeserver import Deviation, FakeServer

from .deviations import MESSAGES, answers, chain, compose, embeddings, on_events, on_response


def test_chat_passes_when_neither_answer_reports_usage(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """usage is optional: a server that sends none, raw or through the SDK, hands the user the same answer."""
    fake.set_deviation(compose(on_response(lambda p, b, r: r.pop("usage"))))
    with answers():
        conformance.run("sdk.chat", ctx)


def _embeddings_answering(floats: list[float], base64_values: list[float]) -> Deviation:
    """Every input's vector is ``floats`` when asked for floats and ``base64_values`` (packed float32) for base64."""
    packed = base64.b64encode(struct.pack(f"<{len(base64_values)}f", *base64_values)).decode()

    def request(p: str, body: dict):
        if p != "/v1/embeddings":
            return None
        answer = embeddings(body)
        for item in answer["data"]:
            item["embedding"] = packed if body.get("encoding_format") == "base64" else floats
        return 200, answer

    return Deviation(request=request)


def test_embeddings_accept_a_difference_of_exactly_the_tolerance(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The tolerance (1e-3 for values up to 1) is itself within it: 0.0 against -0.001 is a float32 rounding, not a
    bug."""
    fake.set_deviation(compose(_embeddings_answering([-0.001] + [0.25] * 15, [0.0] + [0.25] * 15)))
    with answers():
        conformance.run("sdk.embeddings", ctx)


def test_embeddings_tolerance_grows_with_the_value(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """An unnormalized vector's large values keep 3 digits, not 3 decimals: 2.00098 against 2.0 is equal."""
    fake.set_deviation(
        compose(_embeddings_answering([2.0] + [0.25] * 15, [2 + 2**-10] + [0.25] * 15))
    )
    with answers():
        conformance.run("sdk.embeddings", ctx)


def _two_text_blocks(message: dict) -> None:
    text = message["content"][0]["text"]
    message["content"] = [{"type": "text", "text": text[:3]}, {"type": "text", "text": text[3:]}]


def _two_streamed_text_blocks(body: dict, events: list) -> list:
    """The same text streamed as two content blocks, the second from the fourth character on."""
    deltas = [e for e in events if e["type"] == "content_block_delta"]
    first, second = deltas[:3], [{**e, "index": 1} for e in deltas[3:]]
    head = [e for e in events if e["type"] in ("message_start", "content_block_start", "ping")]
    tail = [e for e in events if e["type"] in ("message_delta", "message_stop")]
    start_1 = {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "text", "text": ""},
    }
    return (
        head
        + first
        + [{"type": "content_block_stop", "index": 0}, start_1]
        + second
        + [{"type": "content_block_stop", "index": 1}]
        + tail
    )


def test_anthropic_reads_a_message_of_two_text_blocks_as_their_joined_text(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A model may answer in several text blocks; the user reads them one after the other, created or streamed."""
    fake.set_deviation(
        compose(
            chain(
                on_response(lambda p, b, r: _two_text_blocks(r), path=MESSAGES),
                on_events(_two_streamed_text_blocks, path=MESSAGES),
            )
        )
    )
    with answers():
        conformance.run("sdk.anthropic", ctx)
