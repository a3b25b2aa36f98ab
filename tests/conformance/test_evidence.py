"""A pass names what it judged; no check passes against a null server; a check that expects a refusal first sees
the same request without the fault answered, and is inconclusive when that control fails."""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.testing.fakeserver import MODEL, NULL_MODES, Deviation, FakeServer, error_body

from .deviations import CHAT, compose
from .proofs import CHECK_IDS

# the checks that expect a refusal, and the route where their positive control is sent
NEGATIVE = {
    "chat.json-schema-missing": CHAT,
    "chat.parameter-ranges": CHAT,
    "embeddings.dimensions": "/v1/embeddings",
    "errors.bad-input-4xx": CHAT,
    "errors.bad-input-stream": CHAT,
    "errors.context-overflow": CHAT,
    "errors.context-overflow-stream": CHAT,
    "errors.envelope": CHAT,
    "errors.envelope-types": CHAT,
    "errors.unknown-model": CHAT,
    "messages.errors": "/v1/messages",
    "messages.parameter-ranges": "/v1/messages",
    "messages.required-fields": "/v1/messages",
    "messages.roles": "/v1/messages",
    "responses.cancel": "/v1/responses",
    "responses.errors": "/v1/responses",
    "sdk.errors": CHAT,
    "sdk.errors-stream-async": CHAT,
    "stream.options-without-stream": CHAT,
}


@pytest.mark.parametrize("mode", sorted(NULL_MODES))
@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_no_check_passes_against_a_null_server(
    check_id: str, mode: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """HTTP 200 {} to everything, or a 404 envelope to everything: nothing answered, so nothing may pass."""
    fake.set_deviation(NULL_MODES[mode]())
    try:
        evidence = conformance.run(check_id, ctx)
    except (conformance.CheckFailure, pytest.skip.Exception):
        return
    pytest.fail(f"{check_id} passed against the {mode!r} null server, judging: {evidence}")


def _route_answers(route: str, status: int, body: object) -> Deviation:
    return compose(Deviation(request=lambda path, _: (status, body) if path == route else None))


@pytest.mark.parametrize("check_id", sorted(NEGATIVE))
def test_a_negative_check_is_inconclusive_when_its_control_gets_no_answer(
    check_id: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The route answers HTTP 200 {} to the good request: the refusal the check expects would show nothing."""
    fake.set_deviation(_route_answers(NEGATIVE[check_id], 200, {}))
    with pytest.raises(Inconclusive) as info:
        conformance.run(check_id, ctx)
    assert (
        "the positive control failed" in info.value.msg and "Control: curl -sS" in info.value.msg
    ), info.value.msg
    assert fake.base_url + NEGATIVE[check_id] in info.value.msg


@pytest.mark.parametrize("status", [400, 404])
@pytest.mark.parametrize("check_id", sorted(NEGATIVE))
def test_a_negative_check_is_no_pass_on_a_route_that_refuses_everything(
    check_id: str, status: int, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """Every refusal the check expects comes, and so does a refusal of the good request: inconclusive, naming the
    control, or unsupported where the refused control is a feature the server does not offer."""
    fake.set_deviation(_route_answers(NEGATIVE[check_id], status, error_body(f"refused {status}")))
    with pytest.raises(pytest.skip.Exception) as info:
        conformance.run(check_id, ctx)
    if isinstance(info.value, Unsupported):
        assert conformance.REGISTRY[check_id].needs and f"HTTP {status}" in info.value.msg, (
            info.value.msg
        )
    else:
        assert (
            "the positive control failed" in info.value.msg and f"HTTP {status}" in info.value.msg
        ), info.value.msg


@pytest.mark.parametrize(
    ("answered", "second"), [(None, None), ("", ""), ({"content": None}, {"content": None})]
)
def test_two_absent_values_are_not_agreement(
    answered: object, second: object, ctx: conformance.CheckContext
) -> None:
    with pytest.raises(Inconclusive, match="nothing to judge: no reference value"):
        ctx.agree(
            answered if not isinstance(answered, dict) else answered["content"],
            second,
            "the same text",
            "curl x",
        )


def test_an_empty_collection_is_nothing_to_judge(ctx: conformance.CheckContext) -> None:
    assert ctx.nonempty([0], "choices") == [0]
    with pytest.raises(Inconclusive, match="nothing to judge: no choices: curl x"):
        ctx.nonempty([], "choices", "curl x")


def test_a_check_that_returns_no_evidence_is_inconclusive(fake: FakeServer) -> None:
    registry = conformance.CheckRegistry()
    registry.check("x.silent", "judges nothing", reference="r")(lambda ctx: None)
    registry.check("x.blank", "judges blank", reference="r")(lambda ctx: "  ")
    registry.check("x.said", "says what", reference="r")(lambda ctx: "2 answers")
    with conformance.CheckContext(Endpoint(fake.base_url, MODEL)) as ctx:
        for check_id in ("x.silent", "x.blank"):
            with pytest.raises(Inconclusive, match=f"{check_id} judged nothing"):
                registry.run(check_id, ctx)
        assert registry.run("x.said", ctx) == "2 answers"


def _reasoning_cut(seed_varies: bool) -> Deviation:
    """A reasoning model cut at max_tokens: content null, reasoning random where ``seed_varies``."""
    import itertools

    counter = itertools.count()

    def response(path: str, body: dict, resp: dict) -> dict:
        if path == CHAT and not body.get("stream"):
            text = f"thinking {next(counter)}" if seed_varies else "thinking alike"
            resp["choices"][0]["message"] = {
                "role": "assistant",
                "content": None,
                "reasoning_content": text,
            }
        return resp

    return compose(Deviation(response=response))


@pytest.mark.parametrize("check_id", ["chat.seed", "chat.max-completion-tokens"])
def test_content_null_answers_with_different_reasoning_are_not_the_same(
    check_id: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(_reasoning_cut(seed_varies=True))
    with pytest.raises(conformance.CheckFailure, match="thinking 1"):
        conformance.run(check_id, ctx)
    fake.set_deviation(_reasoning_cut(seed_varies=False))
    assert "thinking alike" in conformance.run(check_id, ctx)


def test_an_answer_whose_error_field_is_null_is_an_answer() -> None:
    """A Responses object carries ``"error": null`` (SGLang 0.5.23 sends it): a control answered so has succeeded."""
    from pytest_infer.conformance.context import answer_problems

    assert (
        answer_problems("/v1/responses", {"object": "response", "id": "resp_1", "error": None})
        == []
    )
    assert answer_problems(
        "/v1/responses", {"object": "response", "id": "resp_1", "error": {"message": "m"}}
    ) == ["an error body"]
    assert (
        answer_problems("/v1/chat/completions", [{"choices": [], "error": None}], stream=True) == []
    )


def test_detokenize_is_read_under_either_engines_field(fake: FakeServer) -> None:
    """vLLM answers /detokenize with ``prompt``, SGLang 0.5.23 with ``text``: both give the text back."""
    from .deviations import on_response

    fake.set_deviation(
        on_response(lambda p, b, r: r.update(text=r.pop("prompt")), path="/detokenize")
    )
    try:
        with conformance.CheckContext(Endpoint(fake.base_url, MODEL)) as ctx:
            assert "(field 'text')" in conformance.run("tokenize.round-trip", ctx)
    finally:
        fake.set_deviation(None)
