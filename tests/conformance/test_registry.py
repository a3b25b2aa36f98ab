"""The registry refuses ambiguity; failures carry expected, got and a reproducer; needs become "unsupported"."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_infer import conformance
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.conformance.expectations import load_file
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


@pytest.mark.parametrize(("kwargs", "match"), [({"severity": "fatal"}, "severity"), ({"needs": ("teleport",)}, "unknown feature")])
def test_bad_metadata_is_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        conformance.CheckRegistry().check("x.bad", "bad", reference="r", **kwargs)(_noop)


def test_a_failure_prints_expected_got_and_curl() -> None:
    failure = conformance.CheckFailure("HTTP 400", {"status": 200, "body": "x" * 2000}, "curl -sS http://h/v1/models")
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
    with conformance.CheckContext(Endpoint(fake.base_url, MODEL), unsupported={"n": "declared"}) as ctx, pytest.raises(conformance.Unsupported, match="unsupported: n: declared"):
        conformance.run("chat.n", ctx)
    assert len(fake.requests) == before


def test_a_refused_feature_is_unsupported_in_the_servers_words(fake: FakeServer) -> None:
    fake.set_deviation(compose(answer_when(lambda p, b: b.get("n", 1) > 1, 400, {"error": {"message": "n>1 is not supported", "type": "invalid_request_error"}})))
    try:
        with conformance.CheckContext(Endpoint(fake.base_url, MODEL)) as ctx, pytest.raises(conformance.Unsupported, match="n>1 is not supported"):
            conformance.run("chat.n", ctx)
    finally:
        fake.set_deviation(BASE)


def test_a_capable_model_check_is_skipped_on_tiny(fake: FakeServer) -> None:
    with conformance.CheckContext(Endpoint(fake.base_url, MODEL), tiny=True) as ctx, pytest.raises(pytest.skip.Exception, match="needs a capable model"):
        conformance.run("tools.auto", ctx)


def test_bundled_expectations_load_and_name_registered_checks() -> None:
    expectations = conformance.load_expectations([], [c.id for c in conformance.REGISTRY])
    assert expectations.deviations, "the bundled files declare known deviations"
    assert all(e.reference.startswith("https://") and e.reason for e in expectations.deviations + expectations.unsupported)


def test_version_ranges_decide_what_applies() -> None:
    expectations = conformance.load_expectations([], [c.id for c in conformance.REGISTRY])
    assert expectations.deviation("errors.envelope-types", "vllm", "0.32.0") is not None
    assert expectations.deviation("errors.envelope", "vllm", "0.32.0") is None
    assert expectations.deviation("errors.envelope", "vllm", "0.9.2") is not None
    assert expectations.deviation("errors.envelope", "vllm", None) is not None  # unknown version: the framework is known to deviate
    assert expectations.deviation("errors.envelope-types", "lmdeploy", "0.32.0") is None  # another framework's entry
    assert expectations.deviation("errors.envelope", "sglang", "0.5.23") is not None
    assert expectations.deviation("errors.envelope", "sglang", "0.5.15") is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("framework: vllm\ndeviations:\n  - check: chat.fields\n    reason: r\n", "lacks reference"),
        ("framework: vllm\ndeviations:\n  - check: chat.nope\n    reason: r\n    reference: u\n", "unknown check 'chat.nope'"),
        ("framework: vllm\ndeviations:\n  - check: chat.fields\n    versions: 'about 3'\n    reason: r\n    reference: u\n", "PEP 440"),
        ("framework: vllm\nunsupported:\n  - feature: telepathy\n    reason: r\n    reference: u\n", "unknown feature"),
        ("deviations: []\n", "framework: NAME"),
        ("framework: vllm\nfixes: []\n", "unknown key"),
    ],
)
def test_a_bad_expectations_file_names_file_and_entry(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(conformance.ExpectationsError, match=match) as info:
        load_file(path, [c.id for c in conformance.REGISTRY])
    assert str(path) in str(info.value)
