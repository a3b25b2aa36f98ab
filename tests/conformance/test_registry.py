"""The registry refuses ambiguity; failures carry expected, got and a reproducer; needs become "unsupported"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_infer import conformance
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.conformance.declarations import load_file
from pytest_infer.conformance.failures import trim
from pytest_infer.testing.fakeserver import MODEL, FakeServer

from .deviations import BASE, answer_when, compose


def _noop(ctx: conformance.CheckContext) -> None:
    ctx.expect(True, "nothing", "nothing")


def test_a_duplicate_id_is_refused() -> None:
    registry = conformance.CheckRegistry()
    registry.check("x.one", "one", reference="r")(_noop)
    with pytest.raises(conformance.DuplicateCheckError, match="x.one.*already registered"):
        registry.check("x.one", "again", reference="r")(_noop)


def test_the_bundled_registry_refuses_a_bundled_id() -> None:
    with pytest.raises(conformance.DuplicateCheckError):
        conformance.check("chat.fields", "a copy", reference="r")(_noop)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"severity": "fatal"}, "severity"), ({"needs": ("teleport",)}, "unknown feature")],
)
def test_bad_metadata_is_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        conformance.CheckRegistry().check("x.bad", "bad", reference="r", **kwargs)(_noop)


def test_a_failure_prints_expected_got_and_curl() -> None:
    failure = conformance.CheckFailure(
        "HTTP 400", {"status": 200, "body": "x" * 2000}, "curl -sS http://h/v1/models"
    )
    failure.attach("x.one", "a title", "warning")
    text = str(failure)
    assert text.startswith("[x.one] a title (warning)\nexpected: HTTP 400\ngot:      {")
    assert "reproduce: curl -sS http://h/v1/models" in text
    assert "chars]..." in text and len(text) < 900  # trimmed, both ends kept


def test_trim_keeps_short_values_whole() -> None:
    assert trim({"a": 1}) == '{"a": 1}'


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with FakeServer(BASE) as server:
        yield server


def test_a_declared_missing_feature_is_unsupported_without_a_request(fake: FakeServer) -> None:
    before = len(fake.requests)
    with (
        conformance.CheckContext(
            Endpoint(fake.base_url, MODEL), unsupported={"n": "declared"}
        ) as ctx,
        pytest.raises(conformance.Unsupported, match="unsupported: n: declared"),
    ):
        conformance.run("chat.n", ctx)
    assert len(fake.requests) == before


def test_a_refused_feature_is_unsupported_in_the_servers_words(fake: FakeServer) -> None:
    fake.set_deviation(
        compose(
            answer_when(
                lambda p, b: b.get("n", 1) > 1,
                400,
                {"error": {"message": "n>1 is not supported", "type": "invalid_request_error"}},
            )
        )
    )
    try:
        with (
            conformance.CheckContext(Endpoint(fake.base_url, MODEL)) as ctx,
            pytest.raises(conformance.Unsupported, match="n>1 is not supported"),
        ):
            conformance.run("chat.n", ctx)
    finally:
        fake.set_deviation(BASE)


def test_a_capable_model_check_is_skipped_on_tiny(fake: FakeServer) -> None:
    conformance.REGISTRY.check(
        "test.capable", "a decision only a real model makes", reference="test", capable_model=True
    )(lambda ctx: "judged")
    try:
        with (
            conformance.CheckContext(Endpoint(fake.base_url, MODEL), tiny=True) as ctx,
            pytest.raises(pytest.skip.Exception, match="needs a capable model"),
        ):
            conformance.run("test.capable", ctx)
    finally:
        conformance.REGISTRY.unregister("test.capable")


def test_bundled_expectations_load_and_name_registered_checks() -> None:
    expectations = conformance.load_expectations([], [c.id for c in conformance.REGISTRY])
    assert expectations.deviations, "the bundled files declare known deviations"
    assert all(
        e.reference.startswith("https://") and e.reason
        for e in expectations.deviations + expectations.unsupported
    )


def test_version_ranges_decide_what_applies() -> None:
    expectations = conformance.load_expectations([], [c.id for c in conformance.REGISTRY])
    assert expectations.deviation("errors.envelope-types", "vllm", "0.32.0") is not None
    assert expectations.deviation("errors.envelope", "vllm", "0.32.0") is None
    assert expectations.deviation("errors.envelope", "vllm", "0.9.2") is not None
    assert (
        expectations.deviation("errors.envelope", "vllm", None) is None
    )  # unknown version: no declaration applies
    assert (
        expectations.deviation("errors.envelope", "vllm", "a-build") is None
    )  # not PEP 440: neither
    assert (
        expectations.deviation("errors.envelope-types", "lmdeploy", "0.32.0") is None
    )  # another framework's entry
    assert expectations.deviation("errors.envelope", "sglang", "0.5.23") is not None
    assert expectations.deviation("errors.envelope", "sglang", "0.5.15") is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            (
                "framework: vllm\ndeviations:\n  - check: chat.fields\n    versions: '>=1'\n    matches: x\n   "
                " reason: r\n"
            ),
            "lacks reference",
        ),
        (
            "framework: vllm\ndeviations:\n  - check: chat.fields\n    matches: x\n    reason: r\n    reference: u\n",
            r"deviations\[0\] \(chat.fields\) lacks versions",
        ),
        (
            (
                "framework: vllm\ndeviations:\n  - check: chat.fields\n    versions: '>=1'\n    reason: r\n   "
                " reference: u\n"
            ),
            "lacks matches",
        ),
        (
            (
                "framework: vllm\ndeviations:\n  - check: chat.fields\n    versions: '>=1'\n    matches: '(x'\n   "
                " reason: r\n    reference: u\n"
            ),
            "not a regular expression",
        ),
        (
            (
                "framework: vllm\ndeviations:\n  - check: chat.fields\n    versions: '>=1'\n    matches: x\n    match:"
                " y\n    reason: r\n    reference: u\n"
            ),
            "unknown key",
        ),
        (
            (
                "framework: vllm\ndeviations:\n  - check: chat.nope\n    versions: '>=1'\n    matches: x\n    reason:"
                " r\n    reference: u\n"
            ),
            "unknown check 'chat.nope'",
        ),
        (
            (
                "framework: vllm\ndeviations:\n  - check: chat.fields\n    versions: 'about 3'\n    matches: x\n   "
                " reason: r\n    reference: u\n"
            ),
            "PEP 440",
        ),
        (
            "framework: vllm\nunsupported:\n  - feature: n\n    reason: r\n    reference: u\n",
            "lacks versions",
        ),
        (
            (
                "framework: vllm\nunsupported:\n  - feature: telepathy\n    versions: '>=1'\n    reason: r\n   "
                " reference: u\n"
            ),
            "unknown feature",
        ),
        ("deviations: []\n", "framework: NAME"),
        ("framework: vllm\nfixes: []\n", "unknown key"),
    ],
)
def test_a_bad_expectations_file_names_file_and_entry(
    tmp_path: Path, text: str, match: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(conformance.ExpectationsError, match=match) as info:
        load_file(path, [c.id for c in conformance.REGISTRY])
    assert str(path) in str(info.value)


def _declared(tmp_path: Path, matches: str, versions: str = ">=0.31.0") -> conformance.Expectations:
    path = tmp_path / "vllm.yaml"
    path.write_text(
        f"framework: vllm\ndeviations:\n  - {{check: models.retrieve, versions: '{versions}', matches: '{matches}',"
        " reason: it answers 404, reference: 'https://example.org/1'}\n"
    )
    return load_file(path, [c.id for c in conformance.REGISTRY])


NOT_FOUND = conformance.CheckFailure(
    "HTTP 200 for GET /v1/models/m", 'HTTP 404: {"detail":"Not Found"}'
)
OTHER_CARD = conformance.CheckFailure(
    "the model card of 'm'", ': {"id": "other", "object": "model"}'
)


def test_a_declaration_excuses_only_the_failure_it_matches(tmp_path: Path) -> None:
    expectations = _declared(tmp_path, r"got: +HTTP 404: ")
    assert (
        expectations.judge("models.retrieve", "vllm", "0.32.0", NOT_FOUND.judged).entry is not None
    )
    verdict = expectations.judge("models.retrieve", "vllm", "0.32.0", OTHER_CARD.judged)
    assert verdict.entry is None
    assert verdict.note.startswith(
        "the declared deviation did not match this failure, so it stays a failure: it answers 404"
    )


@pytest.mark.parametrize("version", [None, "", "a-nightly-build"])
def test_an_unknown_version_gets_no_declaration_and_says_so(
    tmp_path: Path, version: str | None
) -> None:
    verdict = _declared(tmp_path, r"got: +HTTP 404: ").judge(
        "models.retrieve", "vllm", version, NOT_FOUND.judged
    )
    assert verdict.entry is None
    assert (
        verdict.note
        == f"no declared deviation applies: the vllm version is unknown or not PEP 440 ({version!r}); declared for"
        " >=0.31.0"
    )


def test_a_version_outside_the_range_gets_no_declaration(tmp_path: Path) -> None:
    verdict = _declared(tmp_path, r"got: +HTTP 404: ", "<0.31").judge(
        "models.retrieve", "vllm", "0.32.0", NOT_FOUND.judged
    )
    assert verdict == type(verdict)(
        None, "no declared deviation applies: declared for vllm <0.31, not 0.32.0"
    )
    assert _declared(tmp_path, "x").judge(
        "models.retrieve", "sglang", "0.32.0", NOT_FOUND.judged
    ) == type(verdict)(None, "")


def test_the_bundled_matchers_match_the_failures_their_reasons_describe() -> None:
    """The failure text each reason describes, as the check words it: a bundled matcher that misses it would turn a
    known deviation into a failure, and one that matches everything would hide a new one."""
    expectations = conformance.load_expectations([], [c.id for c in conformance.REGISTRY])
    flat = '{"object":"error","message":"messages: Field required","type":"BadRequestError","param":null,"code":400}'
    enveloped = '{"error":{"message":"m","type":"BadRequestError","param":null,"code":400}}'
    anthropic_shape = 'the Anthropic error shape {"type": "error", "error": {"type", "message"}}'
    anthropic_invalid = 'the Anthropic error shape {"type": "error", "error": {"type": "invalid_request_error", "message"}}'
    vllm_validation = '{"error":{"message":"1 validation error","type":"Bad Request","param":"body.model","code":400}}'
    cases = [
        (
            "vllm",
            "0.32.0",
            "errors.envelope-types",
            "error.param and error.code present, each a string or null",
            "error.code is 400, not a string or null: " + enveloped,
        ),
        (
            "vllm",
            "0.9.2",
            "errors.envelope",
            '{"error": {"message": str, "type": str, ...}}',
            f'the body is not {{"error": {{...}}}}: {flat}',
        ),
        (
            "vllm",
            "0.32.0",
            "models.retrieve",
            "HTTP 200 for GET /v1/models/tiny",
            'HTTP 404: {"detail":"Not Found"}',
        ),
        (
            "vllm",
            "0.32.0",
            "responses.stream-terminal",
            "event response.incomplete for a response whose status is 'incomplete'",
            "response.completed",
        ),
        (
            "vllm",
            "0.32.0",
            "messages.create",
            "a well-formed message (max_tokens 8)",
            "stop_sequence is 'missing' with stop_reason 'max_tokens'",
        ),
        (
            "vllm",
            "0.32.0",
            "messages.errors",
            anthropic_shape,
            'the body is not {"type": "error", "error": {...}}: {"error":{"message":"m","type":"Bad Request"}}',
        ),
        (
            "vllm",
            "0.32.0",
            "messages.roles",
            f"{anthropic_invalid} for a 'developer' message",
            f'the body is not {{"type": "error", "error": {{...}}}}: {vllm_validation}',
        ),
        (
            "vllm",
            "0.32.0",
            "messages.parameter-ranges",
            "HTTP 400 for temperature=1.5",
            'HTTP 200: {"id":"m"}',
        ),
        (
            "vllm",
            "0.31.0",
            "messages.parameter-ranges",
            "HTTP 400 for top_k=-1",
            'HTTP 200: {"id":"m"}',
        ),
        (
            "vllm",
            "0.32.0",
            "messages.parameter-ranges",
            f"{anthropic_invalid} for top_p=1.5",
            "error.type is 'BadRequestError', not 'invalid_request_error': {}",
        ),
        (
            "vllm",
            "0.32.0",
            "messages.parameter-ranges",
            f"{anthropic_invalid} for max_tokens=-1",
            f'the body is not {{"type": "error", "error": {{...}}}}: {vllm_validation}',
        ),
        (
            "vllm",
            "0.32.0",
            "messages.required-fields",
            f"{anthropic_invalid} for no model",
            f'the body is not {{"type": "error", "error": {{...}}}}: {vllm_validation}',
        ),
        (
            "sglang",
            "0.5.23",
            "errors.envelope",
            '{"error": {"message": str, "type": str, ...}}',
            f'the body is not {{"error": {{...}}}}: {flat}',
        ),
        (
            "sglang",
            "0.5.23",
            "errors.envelope-types",
            "error.param and error.code present, each a string or null",
            f'the body is not {{"error": {{...}}}}: {flat}',
        ),
        (
            "sglang",
            "0.5.23",
            "errors.context-overflow",
            "the error envelope",
            f'the body is not {{"error": {{...}}}}: {flat}',
        ),
        (
            "sglang",
            "0.5.23",
            "errors.context-overflow-stream",
            "the error envelope",
            f'the body is not {{"error": {{...}}}}: {flat}',
        ),
        (
            "sglang",
            "0.5.23",
            "errors.unknown-model",
            "HTTP 404 for an unknown model",
            'HTTP 200: {"id":"x","model":"no-such-model-pytest-infer"}',
        ),
        (
            "sglang",
            "0.5.23",
            "sdk.errors",
            "NotFoundError for an unknown model",
            "no exception: the request succeeded",
        ),
        ("sglang", "0.5.23", "chat.seed", "the same text twice for seed 4242: 'a b'", "b a"),
        (
            "sglang",
            "0.5.23",
            "stream.options-without-stream",
            "HTTP 400/404/422 for stream_options with stream=false",
            "HTTP 200: {}",
        ),
        (
            "transformers",
            "5.24.0",
            "models.retrieve",
            "HTTP 200 for GET /v1/models/tiny",
            'HTTP 404: {"detail":"Not Found"}',
        ),
    ]
    declared = {(e.framework, e.name) for e in expectations.deviations}
    assert declared == {(framework, check_id) for framework, _, check_id, _, _ in cases}, (
        "a bundled declaration without a case here"
    )
    for framework, version, check_id, expected, got in cases:
        failure = conformance.CheckFailure(expected, got)
        assert expectations.judge(check_id, framework, version, failure.judged).entry is not None, (
            framework,
            check_id,
            failure.judged,
        )
        other = conformance.CheckFailure(expected, "HTTP 500: Internal Server Error")
        assert expectations.judge(check_id, framework, version, other.judged).entry is None, (
            framework,
            check_id,
        )


@pytest.mark.parametrize(
    "versions", [">=b11000,<b11400", ">=11000,<11400"], ids=["b-range", "number-range"]
)
def test_a_declaration_applies_to_a_llamacpp_build_in_its_range(
    tmp_path: Path, versions: str
) -> None:
    """llama.cpp names its releases by build number (``b11312``); builds are ordered by that number, so a range of
    them is written either way, and b9999 is older than b11000 (not after it, as text would sort it)."""
    path = tmp_path / "llamacpp.yaml"
    path.write_text(
        f"framework: llamacpp\ndeviations:\n  - {{check: models.retrieve, versions: '{versions}',"
        " matches: 'got: +HTTP 404: ', reason: it answers 404, reference: 'https://example.org/1'}\n"
    )
    expectations = load_file(path, [c.id for c in conformance.REGISTRY])
    assert (
        expectations.judge("models.retrieve", "llamacpp", "b11312", NOT_FOUND.judged).entry
        is not None
    )
    for outside in ("b9999", "b11400", "b100000"):
        verdict = expectations.judge("models.retrieve", "llamacpp", outside, NOT_FOUND.judged)
        assert verdict.entry is None and f"not {outside}" in verdict.note, verdict.note


def test_llamacpp_builds_sort_by_their_number_in_every_ordering() -> None:
    """The history orders versions, the parser matrix's history too: b9999 before b11312 before b100000."""
    from pytest_infer.results.views import release_version, version_key

    builds = ["b100000", "b11312", "b9999"]
    assert sorted(builds, key=version_key) == ["b9999", "b11312", "b100000"]
    assert sorted(builds, key=lambda b: release_version(b)) == ["b9999", "b11312", "b100000"]
    assert release_version("0.31.0") is not None and release_version("d5e7f0a") is None
