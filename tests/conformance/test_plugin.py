"""The suite through pytest: outcomes per check land in results.json and in the checks x targets table."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_infer import conformance
from pytest_infer.reporting.terminal import render_summary
from pytest_infer.results import model as results_model
from pytest_infer.testing.fakeserver import Deviation, FakeServer

from .deviations import BASE

SUITE = Path(__file__).resolve().parents[2] / "suites" / "conformance"
USER_CHECKS = """
from pytest_infer import conformance

@conformance.check("myorg.greeting", "the model answers", reference="our contract")
def greeting(ctx):
    ex = ctx.chat(max_tokens=4)
    ctx.expect(ex.status == 200, "HTTP 200", ex.text, ex)
    return f"HTTP 200: {ex.text[:40]}"

@conformance.check("myorg.silent", "a check that judges nothing", reference="our contract")
def silent(ctx):
    ctx.chat(max_tokens=4)

@conformance.check("myorg.broken", "a contract the server breaks", reference="our contract", severity="warning")
def broken(ctx):
    ex = ctx.chat(max_tokens=4)
    ctx.expect(ex.data["object"] == "chat.completion.v2", "object 'chat.completion.v2'", ex.data["object"], ex)
"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with FakeServer(BASE) as server:
        yield server


@pytest.fixture
def suite(pytester: pytest.Pytester, fake: FakeServer) -> Iterator:
    """Run a copy of the bundled suite in-process against the fake server; user checks are unregistered after."""
    bundled = {c.id for c in conformance.REGISTRY}
    shutil.copytree(
        SUITE, pytester.path / "conformance", ignore=shutil.ignore_patterns("__pycache__")
    )

    def run(*args: str) -> tuple[pytest.RunResult, dict]:
        result = pytester.runpytest(
            "conformance", "-p", "no:cacheprovider", "-m", "conformance", f"--infer-endpoint={fake.base_url}",
            "--infer-framework=vllm", f"--infer-report-dir={pytester.path / 'report'}", *args,
        )  # fmt: skip
        results_file = pytester.path / "report" / "results.json"
        return result, json.loads(results_file.read_text()) if results_file.exists() else {}

    yield run
    for check_id in {c.id for c in conformance.REGISTRY} - bundled:
        conformance.REGISTRY.unregister(check_id)


def _outcomes(results: dict) -> dict[str, str]:
    return {t["check"]: t["outcome"] for t in results["tests"]}


def test_user_checks_from_a_conftest_run_like_bundled_ones(
    pytester: pytest.Pytester, suite
) -> None:
    pytester.makeconftest(USER_CHECKS)
    result, results = suite("-k", "myorg or chat.fields")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]myorg.broken[]] a contract the server breaks (warning)",
            "*expected: object 'chat.completion.v2'",
            "*got:      chat.completion",
            "*reproduce: curl -sS -X POST http://127.0.0.1:*/v1/chat/completions*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*chat.fields*pass*", "*myorg.broken*FAIL*", "*myorg.greeting*pass*"], consecutive=False
    )
    assert _outcomes(results) == {
        "chat.fields": "passed",
        "myorg.broken": "failed",
        "myorg.greeting": "passed",
        "myorg.silent": "inconclusive",
    }
    silent = next(t for t in results["tests"] if t["check"] == "myorg.silent")
    assert silent["message"].endswith(
        "inconclusive: myorg.silent judged nothing: the check returned None, not the evidence it judged"
    )
    broken = next(t for t in results["tests"] if t["check"] == "myorg.broken")
    assert (
        broken["reproducer"].startswith("curl -sS")
        and broken["extra"] == {"severity": "warning"}
        and broken["suite"] == "conformance"
    )


def test_a_duplicate_check_id_in_a_conftest_is_refused(pytester: pytest.Pytester, suite) -> None:
    pytester.makeconftest(
        'from pytest_infer import conformance\n\n@conformance.check("chat.fields", "mine", reference="r")\ndef'
        " mine(ctx):\n    pass\n"
    )
    result, _ = suite()
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        [
            "*DuplicateCheckError: check id *chat.fields* is already registered by"
            " pytest_infer.conformance.checks.chat.fields"
        ]
    )


def test_declared_deviations_show_as_xfail_and_fixed_and_missing_features_as_unsupported(
    pytester: pytest.Pytester, suite
) -> None:
    pytester.makeconftest(USER_CHECKS)
    (pytester.path / "known.yaml").write_text(
        "framework: vllm\ndeviations:\n  - {check: myorg.broken, versions: '>=9', matches: 'got: +chat.completion$',"
        " reason: answers chat.completion, reference: 'https://example.org/1'}\n  - {check: chat.usage, versions:"
        " '>=1.0', matches: 'usage', reason: usage was wrong, reference: 'https://example.org/2'}\nunsupported:\n  -"
        " {feature: n, versions: '>=9', reason: n>1 is refused, reference: 'https://example.org/3'}\n"
    )
    pytester.makeini("[pytest]\ninfer_expectations = known.yaml\n")
    result, results = suite(
        "-k", "(myorg.broken or chat.usage or chat.n or chat.fields) and not details"
    )
    result.assert_outcomes(passed=1, xfailed=1, xpassed=1, skipped=1)
    assert _outcomes(results) == {
        "chat.fields": "passed",
        "chat.n": "unsupported",
        "chat.usage": "fixed",
        "myorg.broken": "xfail",
    }
    result.stdout.fnmatch_lines(
        ["*chat.n*unsup*", "*chat.usage*FIXED*", "*myorg.broken*xfail*"], consecutive=False
    )
    evidence = {t["check"]: t["extra"].get("evidence") for t in results["tests"]}
    assert (
        evidence["chat.fields"].startswith("id ") and "usage" in evidence["chat.fields"]
    )  # what the pass judged
    assert evidence["myorg.broken"] is None


TWO_REQUESTS = """
from pytest_infer import conformance

@conformance.check("myorg.two", "the chat answer, then the completion", reference="our contract")
def two(ctx):
    chat = ctx.chat(max_tokens=4)
    ctx.expect(chat.data["object"] == "chat.completion.v2", "object 'chat.completion.v2'", chat.data["object"], chat)
    completion = ctx.completion(max_tokens=4)
    ctx.expect(completion.data["object"] == "text_completion", "object 'text_completion'", completion.data["object"],
               completion)
    return "both objects"
"""
TWO_DECLARED = (
    "framework: vllm\ndeviations:\n  - {check: myorg.two, versions: '>=9', matches: 'got: +chat.completion$', reason:"
    " answers chat.completion, reference: 'https://example.org/1'}\n"
)


def test_a_new_failure_after_a_declared_one_fails_the_check(
    pytester: pytest.Pytester, suite, fake: FakeServer
) -> None:
    """The declaration excuses its own failure; the check goes on, and a second deviation later in it is a FAIL
    (it was an xfail while the check ended at the declared failure)."""
    pytester.makeconftest(TWO_REQUESTS)
    (pytester.path / "known.yaml").write_text(TWO_DECLARED)
    pytester.makeini("[pytest]\ninfer_expectations = known.yaml\n")
    _, results = suite("-k", "myorg.two")
    assert _test(results, "myorg.two")["outcome"] == "xfail"
    assert "known deviation: answers chat.completion" in _test(results, "myorg.two")["message"]

    def renamed(path: str, body: dict, response: dict) -> dict:
        response = BASE.response(path, body, response) if BASE.response else response
        return {**response, "object": "completion"} if path == "/v1/completions" else response

    conformance.REGISTRY.unregister("myorg.two")  # the next session's conftest registers it again
    fake.set_deviation(Deviation(request=BASE.request, response=renamed))
    try:
        result, results = suite("-k", "myorg.two")
    finally:
        fake.set_deviation(BASE)
    result.assert_outcomes(failed=1)
    test = _test(results, "myorg.two")
    assert test["outcome"] == "failed" and "expected: object 'text_completion'" in test["message"]
    assert (
        "after 1 excused failure(s) of the same check, the first: expected: object 'chat.completion.v2'"
        in (test["message"])
    )


RETRIEVE_404 = (
    "framework: vllm\ndeviations:\n  - {check: models.retrieve, versions: '>=9', matches: 'got: +HTTP 404: ', reason:"
    " it answers 404, reference: 'https://example.org/1'}\n"
)


def _retrieve_answers(
    fake: FakeServer, status: int, card: dict, version: tuple[int, dict] | None = None
) -> None:
    def request(path: str, body: dict):
        if path.startswith("/v1/models/"):
            return status, card
        if path == "/version" and version is not None:
            return version
        return BASE.request(path, body) if BASE.request else None

    fake.set_deviation(Deviation(request=request, response=BASE.response))


def _test(results: dict, check: str) -> dict:
    return next(t for t in results["tests"] if t["check"] == check)


def test_a_declared_deviation_excuses_only_the_failure_it_names(
    pytester: pytest.Pytester, suite, fake: FakeServer
) -> None:
    """models.retrieve declared as "it answers 404": a 404 is xfail, another model's card a failure that says the
    declaration did not match."""
    (pytester.path / "known.yaml").write_text(RETRIEVE_404)
    pytester.makeini("[pytest]\ninfer_expectations = known.yaml\n")
    try:
        _retrieve_answers(fake, 404, {"detail": "Not Found"})
        _, results = suite("-k", "models.retrieve")
        assert _test(results, "models.retrieve")["outcome"] == "xfail"
        _retrieve_answers(
            fake, 200, {"id": "another-model", "object": "model", "created": 1, "owned_by": "x"}
        )
        result, results = suite("-k", "models.retrieve")
    finally:
        fake.set_deviation(BASE)
    result.assert_outcomes(failed=1)
    test = _test(results, "models.retrieve")
    assert test["outcome"] == "failed" and "another-model" in test["message"]
    assert (
        "the declared deviation did not match this failure, so it stays a failure: "
        in test["message"]
    )
    assert "it answers 404 (matches 'got: +HTTP 404: '" in test["message"]


def test_on_an_unknown_server_version_no_declaration_applies(
    pytester: pytest.Pytester, suite, fake: FakeServer
) -> None:
    """A version that is not PEP 440 (a nightly build's name) may be inside a declared range or not: none applies."""
    (pytester.path / "known.yaml").write_text(RETRIEVE_404)
    pytester.makeini("[pytest]\ninfer_expectations = known.yaml\n")
    try:
        _retrieve_answers(
            fake, 404, {"detail": "Not Found"}, version=(200, {"version": "nightly-build"})
        )
        result, results = suite("-k", "models.retrieve")
    finally:
        fake.set_deviation(BASE)
    result.assert_outcomes(failed=1)
    test = _test(results, "models.retrieve")
    assert results["targets"][test["target"]]["version"] == "nightly-build"
    assert (
        "no declared deviation applies: the vllm version is unknown or not PEP 440 ('nightly-build')"
        in test["message"]
    )


def test_a_broken_expectations_file_fails_with_its_name(pytester: pytest.Pytester, suite) -> None:
    (pytester.path / "known.yaml").write_text(
        "framework: vllm\ndeviations:\n  - {check: chat.nope, versions: '>=1', matches: x, reason: r, reference: u}\n"
    )
    pytester.makeini("[pytest]\ninfer_expectations = known.yaml\n")
    result, _ = suite("-k", "chat.fields")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*conformance expectations: *known.yaml: deviations[[]0[]]: unknown check 'chat.nope'*"]
    )


def test_one_table_shows_every_outcome_for_several_targets() -> None:
    results = results_model.SessionResults()
    for tid in ("vllm", "transformers"):
        results.targets[tid] = results_model.TargetRecord(
            id=tid, framework=tid, model="tiny", version="1.0"
        )
    cells = {
        "chat.n": ("passed", "unsupported"),
        "chat.stop": ("passed", "failed"),
        "errors.envelope-types": ("xfail", "fixed"),
        "stream.options-without-stream": ("passed", "failed"),
    }
    for check, outcomes in cells.items():
        severity = "warning" if check == "stream.options-without-stream" else "error"
        for tid, outcome in zip(("vllm", "transformers"), outcomes):
            record = results_model.TestRecord(
                nodeid=f"t.py::test_check[{check}-{tid}]",
                target=tid,
                outcome=outcome,
                suite="conformance",
                check=check,
                extra={"severity": severity},
            )
            results.add_test(record)
    lines = render_summary(results)
    row = {
        line.split()[0]: line.split()[1:]
        for line in lines
        if line.split() and line.split()[0] in cells
    }
    assert row == {
        "chat.n": ["pass", "unsup"],
        "chat.stop": ["pass", "FAIL"],
        "errors.envelope-types": ["xfail", "FIXED"],
        "stream.options-without-stream": ["pass", "FAIL(w)"],
    }
