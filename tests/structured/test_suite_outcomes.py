"""The bundled structured suite, run by pytester against the fake server: each outcome class is detected.

The fake server is made to answer valid JSON, non-strict JSON, a schema
violation, a cut-off document, 4xx, 5xx, a hang, or to die; the suite must
classify each, fail exactly when it should, and say why. Schemas are drawn
with ``--structured-keywords=enum,const`` so a correct answer is easy to give.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

# pytester's in-process runs drop the modules they imported. numpy (under the report plots) cannot
# be imported twice in one process, and httpx maps httpcore's exceptions by class: a second
# httpcore would turn a timeout into an unknown error. Load both before any inner run.
pytest.importorskip("matplotlib.figure")
httpx.HTTPTransport()

from pytest_infer.structured.judge import SUPPORT_PROBES  # noqa: E402
from pytest_infer.structured.store import FILE_NAME, SWEEP_DIR  # noqa: E402
from pytest_infer.testing.fakeserver import FakeServer, error_body, serving_process  # noqa: E402

from . import deviations  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "suites" / "structured"
NON_STREAMED = ("-k", "response_format and not stream")
PROBED = [
    schema for schema, _ in SUPPORT_PROBES
]  # what a route's support probe sends before its first schema test


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    return pytester


def run(
    pytester: pytest.Pytester, url: str, *args: str, examples: int = 8, report: str = "report"
) -> pytest.RunResult:
    return pytester.runpytest(
        "structured/test_generated.py",
        f"--infer-endpoint={url}",
        f"--infer-report-dir={report}",
        f"--structured-examples={examples}",
        "--structured-keywords=enum,const",
        "--structured-shrink-seconds=20",
        "-p", "no:cacheprovider",
        *args,
    )  # fmt: skip


def results(pytester: pytest.Pytester, report: str = "report") -> dict:
    return json.loads((pytester.path / report / "results.json").read_text())


def inconclusive(test: dict) -> bool:
    """An Inconclusive outcome, as results.json records it (a skip whose message says inconclusive)."""
    return test["outcome"] in ("skipped", "inconclusive") and "inconclusive: " in test["message"]


def matrix_all(pytester: pytest.Pytester) -> dict[str, int]:
    (table,) = results(pytester)["structured"].values()
    return table["all"]


def test_valid_answers_pass_streamed_or_not_and_fill_the_matrix(suite):
    with FakeServer(deviations.correct()) as server:
        result = run(suite, server.base_url)
    result.assert_outcomes(passed=2, skipped=1)  # the fake framework has no native schema field
    result.stdout.fnmatch_lines(
        [
            "*structured output: JSON-Schema keyword x outcome*",
            "*keyword*valid*rejected*truncated*invalid*error*",
        ]
    )
    assert matrix_all(suite) == {"valid": 16}
    assert {
        t["extra"].get("evidence") for t in results(suite)["tests"] if t["outcome"] == "passed"
    } == {
        f"POST /v1/chat/completions via response_format{stream}: 8 answers, 8 valid"
        for stream in ("", "-stream")
    }  # what each pass judged: the schemas it sent and what came back


@pytest.mark.parametrize(
    ("content", "why"),
    [('"a\tb"', "Invalid control character"), ("NaN", "NaN"), ("{'a': 1}", "not strict JSON")],
)
def test_non_strict_json_fails(suite, content, why):
    with FakeServer(deviations.constant(content)) as server:
        result = run(suite, server.base_url, *NON_STREAMED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invalid-json:json: shrunk case*", f"*{why}*"])


def test_a_violation_fails_with_a_minimal_reproducer(suite):
    with FakeServer(deviations.constant('"zzz"')) as server:
        result = run(suite, server.base_url, examples=20)
    result.assert_outcomes(failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*violation:enum: shrunk case*",
            "*'zzz' is not one of *'a'*",
            '*schema:   {"enum": [[]"a"]}*',
            "*sampling: temperature 0.0, seed 0, max_tokens 48*",
            "*reproduce: curl -sS -X POST http://127.0.0.1:*/v1/chat/completions*",
        ]
    )
    stored = json.loads((suite.path / "report" / FILE_NAME).read_text())["reproducers"]
    minimal = next(
        e for e in stored if e["signature"] == "violation:enum" and e["path"] == "response_format"
    )
    assert minimal["schema"] == {"enum": ["a"]} and minimal["minimal"] and not minimal["flaky"]
    assert minimal["output"] == '"zzz"' and minimal["seed"] == 0 and minimal["temperature"] == 0.0
    assert any((suite.path / "report" / "hypothesis-structured").iterdir()), (
        "the shrunk example is in the example database"
    )


def test_truncation_is_counted_not_failed_and_all_truncated_is_inconclusive_with_its_counts(suite):
    """A valid answer cut one character short: every prefix of a valid document can still become valid, so it is
    no failure; but no answer was judged to its end, so it is no pass either."""
    with FakeServer(
        deviations.answering(lambda schema: (deviations.obey(schema)[:-1], "length"))
    ) as server:
        result = run(suite, server.base_url, *NON_STREAMED, "-rs")
    result.assert_outcomes(skipped=1)
    assert [inconclusive(t) for t in results(suite)["tests"]] == [True]
    result.stdout.fnmatch_lines(
        [
            "*inconclusive: 8 distinct schemas*: 0 valid answer(s) of 8 (truncated 8); a verdict needs at least 1*"
        ]
    )
    assert matrix_all(suite) == {"truncated": 8}


def test_refusals_and_truncations_without_a_valid_answer_are_inconclusive(suite):
    """Refused enum schemas and cut-off const ones: nothing was judged, and not everything was refused (no
    "unsupported")."""

    def request(path: str, body: dict):
        schema = deviations.schema_of(body)
        return (
            (400, error_body("enum is not supported"))
            if isinstance(schema, dict) and "enum" in schema
            else None
        )

    cut = deviations.answering(lambda schema: (deviations.obey(schema)[:-1], "length"))
    with FakeServer(
        deviations.Deviation(request=request, response=cut.response, events=cut.events)
    ) as server:
        result = run(suite, server.base_url, *NON_STREAMED, "-rs", examples=12)
    assert [inconclusive(t) for t in results(suite)["tests"]] == [True]
    counts = matrix_all(suite)
    assert counts.keys() == {"rejected", "truncated"}
    result.stdout.fnmatch_lines(
        [
            f"*inconclusive: *: 0 valid answer(s) of 12 (*rejected {counts['rejected']}*); a verdict needs at least 1*"
        ]
    )


def test_too_small_a_share_of_valid_answers_is_inconclusive(suite):
    """One valid answer among many cut off: below ``MIN_VALID_SHARE`` of the accepted schemas the sweep judged too
    little."""
    from pytest_infer.structured.judge import MIN_VALID_SHARE

    turn = iter(range(10**6))
    few = deviations.answering(  # the support probe's known-good schemas answered, the sweep's first alone valid
        lambda schema: (
            (deviations.obey(schema), "stop")
            if schema in PROBED or next(turn) == 0
            else (deviations.obey(schema)[:-1], "length")
        )
    )
    with FakeServer(few) as server:
        result = run(suite, server.base_url, *NON_STREAMED, "-rs", examples=12)
    assert [inconclusive(t) for t in results(suite)["tests"]] == [True]
    result.stdout.fnmatch_lines(
        [
            f"*1 valid answer(s) of 12 (truncated 11, valid 1); a verdict needs at least 1 and {MIN_VALID_SHARE:.0%} of"
            " the 12 accepted*"
        ]
    )


def test_a_clean_rejection_is_unsupported_not_failed(suite):
    with FakeServer(deviations.status(400)) as server:
        result = run(suite, server.base_url, *NON_STREAMED, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*unsupported: json_schema via response_format: every schema was refused*"]
    )
    assert [t["outcome"] for t in results(suite)["tests"]] == ["unsupported"]
    assert matrix_all(suite) == {"rejected": 8}


def test_a_server_error_fails(suite):
    with FakeServer(deviations.status(500)) as server:
        result = run(suite, server.base_url, *NON_STREAMED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*server-error: shrunk case*", "*HTTP 500*simulated HTTP 500*"])


def test_a_hang_is_a_timeout(suite):
    with FakeServer(deviations.hang(2.0)) as server:
        result = run(
            suite,
            server.base_url,
            *NON_STREAMED,
            "--structured-timeout=0.3",
            "--structured-shrink-seconds=0",
            examples=2,
        )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*timeout*no answer within 0.3 s*"])


def test_server_death_stops_the_sweep_and_names_the_schema(suite):
    with serving_process("die-after-1") as url:
        result = run(suite, url, *NON_STREAMED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*sweep stopped early: the server died after this schema:*",
            "*server-died*no longer answers*",
        ]
    )


def test_a_non_deterministic_server_is_reported_flaky(suite):
    with FakeServer(deviations.alternating()) as server:
        result = run(suite, server.base_url, *NON_STREAMED, examples=12)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FLAKY violation:enum*"])


def test_the_same_seed_gives_the_same_schemas_and_verdicts(suite):
    with FakeServer(deviations.constant('"a"')) as server:
        for report in ("one", "two"):
            run(
                suite,
                server.base_url,
                *NON_STREAMED,
                "--structured-seed=3",
                examples=15,
                report=report,
            )
        run(
            suite,
            server.base_url,
            *NON_STREAMED,
            "--structured-seed=4",
            examples=15,
            report="other",
        )
    sweeps = {r: (suite.path / r / SWEEP_DIR).glob("*.jsonl") for r in ("one", "two", "other")}
    texts = {r: [p.read_text() for p in sorted(paths)] for r, paths in sweeps.items()}
    assert texts["one"] == texts["two"] and len(texts["one"][0].splitlines()) == 15
    assert {json.loads(line)["verdict"] for line in texts["one"][0].splitlines()} >= {
        "valid",
        "violation:enum",
    }
    assert texts["one"] != texts["other"], "another seed draws other schemas"


def test_stored_reproducers_are_replayed_first(suite):
    with FakeServer(deviations.constant('"zzz"')) as server:
        run(suite, server.base_url, *NON_STREAMED, examples=10)
        stored = json.loads((suite.path / "report" / FILE_NAME).read_text())["reproducers"]
        server.set_deviation(deviations.correct())
        server.requests.clear()
        result = run(suite, server.base_url, *NON_STREAMED, examples=10)
    result.assert_outcomes(passed=1)
    first_schemas = [  # after the support probe's known-good schemas, sent once before the sweep
        deviations.schema_of(body)
        for method, path, body in server.requests
        if method == "POST" and deviations.schema_of(body) not in (None, *PROBED)
    ]
    assert first_schemas[: len(stored)] == [e["schema"] for e in stored]
    replayed = json.loads((suite.path / "report" / FILE_NAME).read_text())["reproducers"]
    assert all(next(iter(e["replays"].values()))["signature"] == "valid" for e in replayed), (
        "the fix is recorded per target"
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--structured-examples=0", "*--structured-examples: must be at least 1*"),
        ("--structured-seed=x", "*--structured-seed: 'x' is not a whole number*"),
        ("--structured-keywords=type,maxLenght", "*unknown keyword(s) maxLenght*"),
        ("--structured-timeout=-1", "*--structured-timeout: must not be negative*"),
    ],
)
def test_bad_options_are_usage_errors(pytester, option, message):
    result = pytester.runpytest(option, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_stream_without_done_is_judged_by_its_content(suite):
    """transformers serve ends its streams with a finish_reason but no 'data: [DONE]': the framing is the
    conformance suite's business; here the joined content decides."""
    inner = deviations.correct().events
    without_done = deviations.Deviation(
        events=lambda path, body, events: [e for e in inner(path, body, events) if e != "[DONE]"]
    )
    with FakeServer(without_done) as server:
        result = run(suite, server.base_url, "-k", "stream")
    result.assert_outcomes(passed=1)
