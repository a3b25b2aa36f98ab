"""The corpus, survival and support tests of the bundled structured suite, each shown able to fail: against
a fake server that honours every schema they pass, and against one wrong in exactly the way each names."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import httpx
import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # see test_suite_outcomes.py: loaded once for pytester's in-process runs
httpx.HTTPTransport()

from pytest_infer.structured.corpus import BAD_SCHEMAS, CORPUS, INVALID_SCHEMA  # noqa: E402
from pytest_infer.structured.judge import SUPPORT_PROBES  # noqa: E402
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body  # noqa: E402

from .deviations import answering, schema_of  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "suites" / "structured"
KNOWN = {
    json.dumps(s, sort_keys=True): i
    for s, i in [*((c.schema, c.instance) for c in CORPUS.values()), *SUPPORT_PROBES]
}
REFUSE = {
    json.dumps(s, sort_keys=True)
    for kind, s in BAD_SCHEMAS.values()
    if kind in ("malformed", "unsatisfiable")
} | {json.dumps(INVALID_SCHEMA, sort_keys=True)}


def key(schema) -> str:
    return json.dumps(schema, sort_keys=True)


def honest(
    wrong: dict[str, object] | None = None,
    accept: set[str] = frozenset(),
    crash_on: str | None = None,
    broken_by: str | None = None,
) -> Deviation:
    """Refuses every schema it cannot honour with a 400, answers each known schema with its instance; ``wrong``
    answers those schemas with another value, ``accept`` takes those bad schemas with 200, ``crash_on`` 500s;
    after ``broken_by`` (taken with 200) every answer is a string, whatever the schema: alive, but no longer right."""
    broken = [False]

    def answer(schema) -> tuple[str, str]:
        if broken[0]:
            return '"zzz"', "stop"
        if key(schema) == broken_by:
            broken[0] = True
            return '"zzz"', "stop"
        if key(schema) in (wrong or {}) or key(schema) in KNOWN:
            return json.dumps((wrong or {}).get(key(schema), KNOWN.get(key(schema)))), "stop"
        if isinstance(schema, dict) and "enum" in schema:
            return json.dumps(schema["enum"][0]), "stop"
        if isinstance(schema, dict) and "$ref" in schema:
            schema = schema.get("$defs", {}).get(schema["$ref"].rsplit("/", 1)[-1], {})
        opening = {"object": "{", "array": "["}.get(
            schema.get("type") if isinstance(schema, dict) else None
        )
        return (
            (opening, "length") if opening else ("0", "stop")
        )  # a huge or deep schema: cut off at a clean start

    answers = answering(answer)

    def request(path: str, body: dict):
        schema = schema_of(body)
        if schema is None:
            return None
        if crash_on is not None and key(schema) == crash_on:
            return 500, error_body("the grammar compiler crashed", "server_error")
        if key(schema) in REFUSE and key(schema) not in accept and key(schema) != broken_by:
            return 400, error_body("invalid schema", "invalid_request_error")
        return None

    return Deviation(request=request, response=answers.response, events=answers.events)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    return pytester


def run(
    pytester: pytest.Pytester, server: FakeServer, test_file: str, *args: str
) -> dict[str, dict]:
    pytester.runpytest(
        f"structured/{test_file}",
        f"--infer-endpoint={server.base_url}",
        "--infer-report-dir=report",
        "-p",
        "no:cacheprovider",
        *args,
    )
    tests = json.loads((pytester.path / "report" / "results.json").read_text())["tests"]
    return {
        t["nodeid"]
        .split("[", 1)[1]
        .rstrip("]")
        .replace("endpoint-", "")
        .replace("-endpoint", ""): t
        for t in tests
    }


def test_the_corpus_passes_a_server_that_honours_it_and_fails_the_case_it_breaks(suite):
    with FakeServer(honest()) as server:
        good = run(suite, server, "test_corpus.py", "-k", "response_format and not stream")
    assert {t["outcome"] for t in good.values()} == {"passed"} and len(good) == len(CORPUS) + 1
    evidence = {name: t["extra"].get("evidence", "") for name, t in good.items()}
    assert evidence["response_format-length-with-pattern"] == (
        "POST /v1/chat/completions via response_format: 3 answers, 3 valid"
    )  # what a pass judged: each seed's answer, valid
    assert re.fullmatch(
        r"POST /v1/chat/completions via response_format: 2 answers, 1 (valid|rejected), 1 (valid|rejected)",
        evidence[
            "response_format"
        ],  # the invalid schema: the known-good one answered, the invalid one refused
    ), evidence
    case = CORPUS["length-with-pattern"]
    with FakeServer(honest(wrong={key(case.schema): "abcdefgh"})) as server:
        bad = run(suite, server, "test_corpus.py", "-k", "response_format and not stream")
    failed = {name: t for name, t in bad.items() if t["outcome"] == "failed"}
    assert list(failed) == ["response_format-length-with-pattern"]
    assert (
        "3 of 3 seeds broke the schema (length bounds dropped next to pattern"
        in failed["response_format-length-with-pattern"]["message"]
    )


def test_a_case_whose_seeds_met_server_errors_is_not_filed_under_its_grammar_bug(suite):
    """Only answers that break the schema are the case's bug class; a 5xx (or a timeout) is counted as what it was."""
    case = CORPUS["length-with-pattern"]
    with FakeServer(honest(crash_on=key(case.schema))) as server:
        results = run(
            suite,
            server,
            "test_corpus.py",
            "-k",
            "length-with-pattern and response_format and not stream",
        )
    (only,) = results.values()
    assert only["outcome"] == "failed"
    assert "length-with-pattern: 3 of 3 seeds failed (server-error 3)" in only["message"]
    assert "broke the schema" not in only["message"] and case.bug not in only["message"]


def test_the_invalid_schema_test_fails_when_the_server_takes_it(suite):
    with FakeServer(honest(accept={key(INVALID_SCHEMA)})) as server:
        results = run(
            suite,
            server,
            "test_corpus.py",
            "-k",
            "invalid_schema and response_format and not stream",
        )
    (only,) = results.values()
    assert only["outcome"] == "failed" and "accepted with HTTP 200 (failed open)" in only["message"]


def test_survival_fails_on_a_crash_and_refusal_fails_on_a_500_or_a_200(suite):
    with FakeServer(honest()) as server:
        good = run(suite, server, "test_survival.py", "-k", "not stream and not native")
    assert {t["outcome"] for t in good.values()} == {"passed"}
    assert all(
        re.match(
            r"POST /v1/chat/completions via response_format: \d answers", t["extra"]["evidence"]
        )
        for t in good.values()
    )
    name, (kind, schema) = next((n, b) for n, b in BAD_SCHEMAS.items() if b[0] == "malformed")
    with FakeServer(honest(crash_on=key(schema))) as server:
        crashed = run(
            suite, server, "test_survival.py", "-k", f"{name} and not stream and not native"
        )
    assert (
        crashed[f"response_format-{name}"]["outcome"] == "failed"
        and "server-error instead of a 4xx" in crashed[f"response_format-{name}"]["message"]
    )
    with FakeServer(honest(accept={key(schema)})) as server:
        accepted = run(
            suite,
            server,
            "test_survival.py",
            "-k",
            f"refused and {name} and not stream and not native",
        )
    assert accepted[f"response_format-{name}"]["outcome"] == "failed"
    assert "accepted with HTTP 200 (failed open)" in accepted[f"response_format-{name}"]["message"]


def test_support_fails_when_the_schema_is_ignored_and_is_unsupported_when_refused(suite):
    with FakeServer(honest()) as server:
        honoured = run(suite, server, "test_support.py", "-k", "response_format and not stream")
    assert [t["outcome"] for t in honoured.values()] == ["passed"]
    assert [t["extra"]["evidence"] for t in honoured.values()][0].startswith(
        "POST /v1/chat/completions via response_format: "
    )
    with FakeServer(answering(lambda schema: ("Sure! Here is some text.", "stop"))) as server:
        ignored = run(suite, server, "test_support.py", "-k", "response_format and not stream")
    (only,) = ignored.values()
    assert only["outcome"] == "failed" and "response_format is IGNORED" in only["message"]
    refusing = Deviation(
        request=lambda path, body: (
            (400, error_body("json_schema is not supported"))
            if schema_of(body) is not None
            else None
        )
    )
    with FakeServer(refusing) as server:
        refused = run(suite, server, "test_support.py", "-k", "response_format and not stream")
    assert [t["outcome"] for t in refused.values()] == ["unsupported"]


def test_a_route_that_applies_no_schema_fails_once_and_its_schema_tests_are_not_exercised(suite):
    """A server that takes response_format and writes plain text: the support test fails on it, each test of one
    schema on that route says so instead of failing (it judged no grammar), and the probe's requests are sent once
    for the whole suite, not again by every test (transformers serve took minutes a test on a real model)."""
    with FakeServer(answering(lambda schema: ("Sure! Here is some text.", "stop"))) as server:
        results = run(
            suite, server, ".", "-k", "response_format and not stream", "-p", "no:randomly"
        )
        schema_requests = [
            b for _, p, b in server.requests if p == "/v1/chat/completions" and schema_of(b)
        ]
    support = results.pop("response_format")  # test_support's row (its only parameter is the route)
    assert support["outcome"] == "failed" and "response_format is IGNORED" in support["message"]
    assert support["extra"]["evidence"].startswith(
        "POST /v1/chat/completions via response_format: "
    )
    assert {name.split("-", 1)[0] for name in results} >= {"response_format"} and len(
        results
    ) > len(CORPUS)
    assert {t["outcome"] for t in results.values()} == {"not_exercised"}, {
        n: t["outcome"] for n, t in results.items() if t["outcome"] != "not_exercised"
    }
    assert all(
        "response_format takes a schema and applies none" in t["message"] for t in results.values()
    )
    assert len(schema_requests) == 2 * len(
        SUPPORT_PROBES
    )  # the probe's two seeds per known-good schema, once
    with FakeServer(honest()) as server:  # a route that applies schemas runs every test as before
        honoured = run(suite, server, "test_corpus.py", "-k", "response_format and not stream")
    assert {t["outcome"] for t in honoured.values()} == {"passed"}


def test_survival_means_a_known_good_schema_still_answered_validly_not_any_answer(suite):
    """After the bad schema the server still answers HTTP 200, but wrongly: that is not surviving it."""
    name, (kind, schema) = next((n, b) for n, b in BAD_SCHEMAS.items() if b[0] == "malformed")
    with FakeServer(honest(broken_by=key(schema))) as server:
        results = run(suite, server, "test_survival.py", "-k", f"survives and {name}")
    (only,) = results.values()
    assert only["outcome"] == "failed"
    assert f"did not survive {kind} schema {name!r}: the known-good schema " in only["message"]
    assert "then got violation:type" in only["message"]


def test_refusal_and_survival_are_inconclusive_when_the_route_answers_no_good_schema(suite):
    """The positive control: a route that refuses good schemas too says nothing by refusing a bad one."""
    with FakeServer(
        Deviation(
            request=lambda path, body: (
                (400, error_body("no")) if schema_of(body) is not None else None
            )
        )
    ) as server:
        results = run(suite, server, "test_survival.py", "-k", "not stream and not native")
    assert {(t["outcome"], "inconclusive: " in t["message"]) for t in results.values()} == {
        ("inconclusive", True)
    }
    refused = next(t for name, t in results.items() if name.startswith("response_format-"))
    assert (
        "positive control failed: no known-good schema got a valid answer on this route (rejected 3;"
        in refused["message"]
    )


def test_a_corpus_case_of_refused_and_cut_off_answers_is_inconclusive_with_its_counts(suite):
    """Seeds refused and seeds cut off, none valid: neither a pass nor "unsupported"; the case's row counts them."""
    case = CORPUS["length-with-pattern"]

    def request(path: str, body: dict):
        return (
            (400, error_body("not this seed"))
            if schema_of(body) == case.schema and body["seed"] % 2 == 0
            else None
        )

    cut = answering(
        lambda schema: (
            ('"a', "length")
            if schema == case.schema
            else (json.dumps(KNOWN.get(key(schema))), "stop")
        )
    )
    with FakeServer(Deviation(request=request, response=cut.response, events=cut.events)) as server:
        results = run(
            suite,
            server,
            "test_corpus.py",
            "-k",
            "response_format and not stream and length-with-pattern",
        )
    (only,) = results.values()
    assert only["outcome"] == "inconclusive"
    assert (
        "inconclusive: length-with-pattern: 0 valid answer(s) of 3 (rejected 2, truncated 1); a verdict needs at"
        " least 1" in only["message"]
    )
    (table,) = json.loads((suite.path / "report" / "results.json").read_text())[
        "structured"
    ].values()
    assert table["case:length-with-pattern"] == {"rejected": 2, "truncated": 1}
