"""The chat checks where what they report goes beyond pass or fail: the fields table's record of each request
field, the request a failure names when two identical requests get different answers, and the choice a
content lookup reads."""

from __future__ import annotations

from itertools import count

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.checks.chat import REQUEST_FIELDS, content_of
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

from .deviations import CHAT, answer_when, answers, compose


def test_content_of_reads_the_choice_asked_for() -> None:
    data = {"choices": [{"message": {"content": "first"}}, {"message": {"content": "second"}}]}
    assert [content_of(data), content_of(data, 1), content_of(data, 2)] == ["first", "second", None]


def test_request_fields_records_each_field_for_the_chat_endpoint(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The fields table reads a refusal as a field the server is honest about, unlike one it ignores."""
    recorded = []
    ctx.request_fields = lambda endpoint, statuses: recorded.append((endpoint, statuses))
    fake.set_deviation(
        compose(
            answer_when(
                lambda p, b: p == CHAT and b.get("n") == 2,
                400,
                error_body("n > 1 is not supported", param="n"),
            )
        )
    )
    with answers():
        conformance.run("chat.request-fields", ctx)
    assert recorded == [
        (
            "POST /v1/chat/completions",
            {name: "refused" if name == "n" else "honoured" for name in REQUEST_FIELDS},
        )
    ]


def test_seed_failing_on_its_second_request_names_that_request(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Both requests are the same; the failure still says which one the check made (the server answered the first)."""
    seeded = count()

    def second_fails(p: str, b: dict):
        if p == CHAT and b.get("seed") == 4242 and next(seeded) == 1:
            return 500, {"detail": "boom"}
        return None

    fake.set_deviation(compose(Deviation(request=second_fails)))
    with answers(), pytest.raises(conformance.CheckFailure) as info:
        conformance.run("chat.seed", ctx)
    assert "HTTP 200 for seed=4242" in str(info.value), str(info.value)
