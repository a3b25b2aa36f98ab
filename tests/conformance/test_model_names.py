"""The model an answer names: the one asked for, an alias the server lists for the same weights, or the name at a Hub
revision passes on every route; another model's name fails, the model the server also lists included."""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.testing.fakeserver import FAULTS, MODEL, Deviation, FakeServer, wrong_model

from .deviations import CHAT, MODEL_CHECKS, base_request, compose


def _listing(*cards: dict) -> Deviation:
    def request(path: str, body: dict):
        if path == "/v1/models":
            return 200, {
                "object": "list",
                "data": [{"object": "model", "created": 1, "owned_by": "x", **c} for c in cards],
            }
        return base_request(path, body)

    return Deviation(request=request)


def _answering_as(name: str, *cards: dict) -> Deviation:
    renamed = wrong_model(name)
    return Deviation(
        request=_listing(*cards).request, response=compose(renamed).response, events=renamed.events
    )


WEIGHTS = {"id": MODEL, "root": "/models/fake"}
PASSES = {
    "an alias of the same weights": _answering_as(
        "fake-alias", WEIGHTS, {"id": "fake-alias", "root": "/models/fake"}
    ),
    "the name at a Hub revision": _answering_as(f"{MODEL}@main", WEIGHTS),
    "the name asked for, listed by none": compose(
        FAULTS["unlisted-model"]()
    ),  # transformers serve on the tiny model
}
FAILS = {
    "another model the server also serves": _answering_as(
        "other", WEIGHTS, {"id": "other", "root": "/models/other"}
    ),
    "a name nobody lists": _answering_as("renamed-by-a-proxy", WEIGHTS),
    # no root on either card: nothing shows the two ids name the same weights (llama.cpp, transformers serve, proxies)
    "another listed name, where no card names its weights": _answering_as(
        "some-other-model", {"id": MODEL}, {"id": "some-other-model"}
    ),
    "a listed name whose card names no weights": _answering_as("other", WEIGHTS, {"id": "other"}),
}


@pytest.mark.parametrize("case", sorted(PASSES))
@pytest.mark.parametrize("check_id", MODEL_CHECKS)
def test_names_of_the_model_asked_for_pass(
    check_id: str, case: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(PASSES[case])
    evidence = conformance.run(check_id, ctx)
    assert f"the model asked for, {MODEL!r}" in evidence and check_id.split(".")[0] in evidence


@pytest.mark.parametrize("case", sorted(FAILS))
@pytest.mark.parametrize("check_id", MODEL_CHECKS)
def test_another_models_name_fails(
    check_id: str, case: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(FAILS[case])
    with pytest.raises(
        conformance.CheckFailure, match="expected: the model asked for, 'fake-model'"
    ):
        conformance.run(check_id, ctx)


def test_an_answer_that_is_no_answer_fails_before_its_name_is_read(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """An echo of the request names the model asked for; it is no chat completion."""
    fake.set_deviation(
        Deviation(
            request=lambda path, body: (
                (200, body) if path == CHAT and not body.get("stream") else None
            )
        )
    )
    with pytest.raises(conformance.CheckFailure, match="a correct answer of /v1/chat/completions"):
        conformance.run("chat.model", ctx)
