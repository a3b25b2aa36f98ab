"""The responses checks on valid answers a correct fake server never gives: usage without the optional details,
a chained turn billed exactly its carried tokens, and a background response that is in progress or already done
when it is cancelled."""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.checks.responses import INPUT, PATH
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

from .deviations import answer_when, answers, compose, on_response

FOLLOW_UP = "And then?"  # what responses.chain sends as the next turn


def test_usage_without_details_passes(ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """The token details are optional: a server that leaves them out has nothing cached or reasoned to count."""
    fake.set_deviation(
        compose(
            on_response(
                lambda p, b, r: [
                    r["usage"].pop(k) for k in ("input_tokens_details", "output_tokens_details")
                ],
                path=PATH,
            )
        )
    )
    with answers():
        conformance.run("responses.usage", ctx)


def test_chain_billing_exactly_the_first_turns_input_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The carried turn is the least a chained answer bills: a server that carries only the first turn's input is
    right."""

    def exact(p: str, b: dict, r: dict) -> None:
        if b.get("previous_response_id"):
            r["usage"]["input_tokens"] = len(INPUT) + len(FOLLOW_UP)

    fake.set_deviation(compose(on_response(exact, path=PATH)))
    with answers():
        conformance.run("responses.chain", ctx)
    chained = [b for m, p, b in fake.requests if p == PATH and b.get("previous_response_id")]
    assert [b["input"] for b in chained] == [FOLLOW_UP]


def _background(status: str, cancel: Deviation | None = None) -> Deviation:
    """The background response answered ``status`` (with the reason an incomplete one needs), its cancel answered by
    ``cancel``."""

    def started(p: str, b: dict, r: dict) -> None:
        if b.get("background"):
            r.update(
                status=status,
                incomplete_details={"reason": "max_output_tokens"}
                if status == "incomplete"
                else None,
            )

    return compose(
        Deviation(
            request=cancel.request if cancel else None,
            response=on_response(started, path=PATH).response,
        )
    )


def _cancel(p: str, b: dict) -> bool:
    return p.endswith("/cancel") and "does_not_exist" not in p


def test_cancel_of_an_in_progress_background_response_passes(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A background response may already be running when the create call answers; it is cancelled all the same."""
    fake.set_deviation(_background("in_progress"))
    with answers():
        conformance.run("responses.cancel", ctx)


@pytest.mark.parametrize("finished", ["completed", "incomplete"])
def test_cancel_of_a_finished_response_answering_it_unchanged_passes(
    finished: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A short background job can finish before it is cancelled: cancelling it then leaves it as it ended."""
    fake.set_deviation(
        _background(
            finished,
            answer_when(
                _cancel, 200, {"id": "resp_done", "object": "response", "status": finished}
            ),
        )
    )
    with answers():
        conformance.run("responses.cancel", ctx)


@pytest.mark.parametrize("finished", ["completed", "incomplete"])
def test_cancel_of_a_finished_response_refused_passes(
    finished: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Refusing to cancel what has finished, with the error envelope, is the other right answer."""
    fake.set_deviation(
        _background(
            finished, answer_when(_cancel, 400, error_body(f"Cannot cancel a {finished} response."))
        )
    )
    with answers():
        conformance.run("responses.cancel", ctx)
