"""The tools checks at the edges a correct fake server never shows: a valid alternative answer, the seeds a
retry sends, when a check gives up and what it then says, a bad fragment among good ones in one delta."""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.checks.tools import assemble
from pytest_infer.outcomes import Inconclusive
from pytest_infer.testing.fakeserver import FakeServer

from .deviations import (
    CHAT,
    _choice,
    answers,
    compose,
    on_events,
    on_response,
    posted,
    tool_streams_cut,
)


def test_assemble_reports_a_non_string_arguments_piece_and_reads_on() -> None:
    """A bad piece is reported and passed over; the next fragment in the same delta still counts."""
    head = {
        "index": 0,
        "id": "call_1",
        "function": {"name": "get_time", "arguments": {"tz": "UTC"}},
    }
    calls, problems = assemble(
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [head, {"index": 0, "function": {"arguments": "{}"}}]
                        },
                    }
                ]
            }
        ]
    )
    assert problems == [f"call 0 arguments fragment is dict, not a string: {head}"]
    assert calls == {
        0: {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    }


def test_required_accepts_finish_reason_stop(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """OpenAI itself ends a forced call with 'stop': a server that does the same is right."""
    fake.set_deviation(
        compose(
            on_response(
                lambda p, b, r: (
                    _choice(r).update(finish_reason="stop")
                    if b.get("tool_choice") == "required"
                    else None
                )
            )
        )
    )
    with answers():
        conformance.run("tools.required", ctx)


@pytest.mark.parametrize(
    ("check_id", "reason"),
    [("tools.stream-fragments", "in 3 streamed tool calls"), ("sdk.tool-stream", "with 3 seeds")],
)
def test_a_streamed_call_gives_up_after_three_seeds_and_says_so(
    check_id: str, reason: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Three seeds, then "inconclusive" with the last request to rerun: a fourth would only cost time."""
    fake.set_deviation(compose(on_events(tool_streams_cut)))
    with pytest.raises(Inconclusive) as info:
        conformance.run(check_id, ctx)
    assert [b["seed"] for b in posted(fake, CHAT) if b.get("stream")] == [1234, 1235, 1236]
    msg = str(info.value.msg)
    assert msg.startswith(
        f"inconclusive: the model ran to max_tokens {reason}: curl -sS -N -X POST "
    ), msg
    assert '"seed": 1236' in msg


def test_parallel_streams_with_the_seed_of_the_answer_it_judged(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The first seed ran to max_tokens with nothing shown, so the second made the calls; the stream must ask
    with that seed, or it may compare calls of another sample."""
    cut = {"role": "assistant", "content": ""}
    fake.set_deviation(
        compose(
            on_response(
                lambda p, b, r: (
                    _choice(r).update(message=cut, finish_reason="length")
                    if b.get("seed") == 1234 and not b.get("stream")
                    else None
                )
            )
        )
    )
    with answers():
        conformance.run("tools.parallel", ctx)
    assert [(b["seed"], bool(b.get("stream"))) for b in posted(fake, CHAT)] == [
        (1234, False),
        (1235, False),
        (1235, True),
    ]
