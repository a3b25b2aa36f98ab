"""A fix is not a regression: a field the API drift finds removed, renamed or retyped because the candidate stopped a
deviation a check failed on in the baseline is a change, listed with what clients that read the field see now; a field
no failing check accounts for still fails the gate.

The link is what the baseline recorded of the failure: the check failed there and passes on the candidate, the
request it failed on (its reproducer) went to the drifted endpoint, and the failure names the field in its own words
(its title, what it expected), not in what it got: a check's "got" is often the server's whole answer."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from conformance.deviations import BASE, compose
from conformance.proofs import MUTATIONS
from results_factory import session

from pytest_infer.cli import main
from pytest_infer.conformance.table import deviation_ended
from pytest_infer.gating.compare import compare
from pytest_infer.results.model import SessionResults
from pytest_infer.results.model import TestRecord as Record
from pytest_infer.table import Fixed
from pytest_infer.testing.fakeserver import FakeServer

SUITE = Path(__file__).resolve().parents[2] / "suites" / "conformance"
CHECK = "stream.usage-off"
STREAM = "POST /v1/chat/completions stream"
CURL = "curl -sS -N -X POST http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' -d "
USAGE_CHUNK = {
    "id": "c",
    "choices": [],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
# what the check's failure says, as results.json keeps it (the check's own words, then its reproducer)
MESSAGE = (
    f"Failed: [{CHECK}] without stream_options.include_usage no chunk carries usage (error)\n"
    "expected: no usage and no empty-choices chunk\n"
    f"got:      {json.dumps([USAGE_CHUNK])}\n"
    f"reproduce: {CURL}'{{\"stream\": true}}'"
)


def with_check(
    results: SessionResults, outcome: str, *, message: str = MESSAGE, check: str = CHECK
) -> SessionResults:
    """The results with ``check`` recorded as the conformance suite records it (a failure keeps its reproducer)."""
    failed = outcome in ("failed", "xfail")
    results.add_test(
        Record(
            nodeid=f"conformance/test_conformance.py::test_check[{check}-vllm]",
            target="vllm",
            outcome=outcome,
            suite="conformance",
            check=check,
            message=message if failed else "",
            reproducer=message.rsplit("reproduce: ", 1)[-1] if failed else "",
        )
    )
    return results


def shapes(results: SessionResults, *chunks: dict, endpoint: str = STREAM) -> SessionResults:
    for chunk in chunks:
        results.table("conformance").record("vllm", endpoint, chunk)
    return results


CHUNK = {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}


def pair(before: str, after: str, *, endpoint: str = STREAM, message: str = MESSAGE):
    """A baseline that served a usage chunk no one asked for and ``service_tier``, and a candidate that serves
    neither; ``CHECK`` went from ``before`` to ``after``."""
    served = {**CHUNK, "service_tier": "default"}
    baseline = shapes(
        with_check(session("0.31.0"), before, message=message),
        served,
        USAGE_CHUNK,
        endpoint=endpoint,
    )
    return baseline, shapes(with_check(session("0.32.0"), after), CHUNK, endpoint=endpoint)


def api(gate) -> list[tuple[str, str, str]]:
    return sorted(
        (f.kind, f.subject.split(": ", 1)[1], f.detail) for f in gate.findings if f.area == "api"
    )


@pytest.mark.parametrize("before", ["failed", "xfail"])
def test_a_field_removed_by_a_fixed_deviation_is_a_change_and_a_field_no_check_failed_on_a_regression(
    before: str,
):
    gate = compare(*pair(before, "passed"))
    assert api(gate) == [
        (
            "change",
            "usage",
            f"removed: the baseline served it; the end of a deviation: {CHECK} failed on it in the baseline and passes"
            " now; clients that read usage without asking for it will miss it",
        ),
        ("regression", "service_tier", "removed: the baseline served it"),
    ]
    assert gate.verdict == "FAIL: 1 regression"  # the real removal still fails the upgrade


def test_without_the_real_removal_the_fix_passes_the_gate():
    baseline, candidate = pair("failed", "passed")
    gate = compare(baseline, shapes(candidate, {**CHUNK, "service_tier": "default"}))
    assert gate.verdict == "PASS: no regressions" and [
        f.subject for f in gate.of("improvement")
    ] == [CHECK]


@pytest.mark.parametrize(
    ("before", "after", "endpoint", "message"),
    [
        (
            "failed",
            "failed",
            STREAM,
            MESSAGE,
        ),  # the deviation is still there: the removal is something else
        ("passed", "passed", STREAM, MESSAGE),  # no check failed on it
        ("failed", "inconclusive", STREAM, MESSAGE),  # not shown gone: the candidate judged nothing
        (
            "failed",
            "passed",
            "POST /v1/completions stream",
            MESSAGE,
        ),  # it failed on another endpoint
        (
            "failed",
            "passed",
            STREAM,
            MESSAGE.replace("usage", "tally"),
        ),  # its verdict does not name the field
        (
            "failed",
            "passed",
            STREAM,
            MESSAGE.replace("-N ", ""),
        ),  # it failed on the non-streamed answer
    ],
)
def test_a_removal_no_fixed_failure_accounts_for_stays_a_regression(
    before, after, endpoint, message
):
    gate = compare(*pair(before, after, endpoint=endpoint, message=message))
    assert [f.subject.split(": ", 1)[1] for f in gate.regressions if f.area == "api"] == [
        "service_tier",
        "usage",
    ]


def test_the_link_reads_the_checks_own_words_not_what_it_got_nor_its_request_and_allows_a_base_path():
    fixed = Fixed(CHECK, MESSAGE, MESSAGE.rsplit("reproduce: ", 1)[1])
    assert deviation_ended(STREAM, ["usage"], [fixed]) == CHECK
    assert (
        deviation_ended(STREAM, ["choices[].delta.usage"], [fixed]) is None
    )  # its key alone is not its path
    assert deviation_ended(STREAM, ["total_tokens"], [fixed]) is None  # only in the answer it got
    assert (
        deviation_ended(STREAM, ["include_usage"], [fixed]) is None
    )  # a word of the title, not a key it names
    asked = Fixed(
        CHECK,
        "expected: no stray chunk\ngot: 2 chunks\nreproduce: curl ... usage",
        fixed.reproducer,
    )
    assert (
        deviation_ended(STREAM, ["usage"], [asked]) is None
    )  # the request names it; the failure does not
    prefixed = Fixed(CHECK, MESSAGE, fixed.reproducer.replace("8000/v1", "8000/vllm/v1"))
    assert deviation_ended(STREAM, ["usage"], [prefixed]) == CHECK
    declared = Fixed(
        "responses.x",
        "[responses.x] t\nexpected: one reasoning item\ngot: 2\nreproduce: curl -sS -N -X POST http://h:1/v1/responses"
        " -d '{}'\nknown deviation: message items carry an empty summary (vllm#1)",
        "curl -sS -N -X POST http://h:1/v1/responses -d '{}'",
    )
    assert (
        deviation_ended("POST /v1/responses stream", ["item.summary"], [declared]) is None
    )  # "summary" only
    exact = Fixed(
        declared.check,
        declared.message.replace("an empty summary", "an empty item.summary"),
        declared.reproducer,
    )
    assert deviation_ended("POST /v1/responses stream", ["item.summary"], [exact]) == "responses.x"
    assert deviation_ended("POST /v1/responses", ["item.summary"], [exact]) is None


def test_a_retyped_or_renamed_field_a_fixed_check_named_says_what_clients_see_now():
    endpoint = "POST /v1/messages"
    message = (
        "Failed: [messages.stop-sequence] ...\nexpected: {'stop_sequence': '.'}\ngot: {'stop_sequence': 0}\n"
        "reproduce: curl -sS -X POST http://127.0.0.1:1/v1/messages -d '{}'"
    )
    baseline = shapes(
        with_check(session("0.31.0"), "failed", message=message, check="messages.stop-sequence"),
        {"stop_sequence": 0, "reasoning_content": "t"},
        endpoint=endpoint,
    )
    candidate = shapes(
        with_check(session("0.32.0"), "passed", check="messages.stop-sequence"),
        {"stop_sequence": ".", "reasoning": "t"},
        endpoint=endpoint,
    )
    assert api(compare(baseline, candidate)) == [
        (
            "change",
            "stop_sequence",
            "retyped; the end of a deviation: messages.stop-sequence failed on it in the baseline and passes now;"
            " clients that read stop_sequence as integer now get string",
        ),
        (
            "regression",
            "reasoning_content",
            "renamed: the same values now come as reasoning",
        ),  # named by no failure
    ]


def usage_and_service_tier():
    """The baseline server: the deviation ``stream.usage-off`` exists for, and a field of its own in every chunk."""
    deviation = compose(MUTATIONS[CHECK])

    def events(path: str, body: dict, events: list) -> list:
        changed = deviation.events(path, body, events) if deviation.events else events
        return [{**e, "service_tier": "default"} if isinstance(e, dict) else e for e in changed]

    return dataclasses.replace(deviation, events=events)


def run_check(pytester: pytest.Pytester, deviation, out: str) -> Path:
    with FakeServer(deviation) as server:
        pytester.runpytest(
            "conformance",
            "-k",
            CHECK,
            f"--infer-endpoint={server.base_url}",
            f"--infer-report-dir={out}",
            "-p",
            "no:cacheprovider",
        )
    return pytester.path / out / "results.json"


def test_a_real_session_fixing_a_deviation_lists_the_field_as_a_change_and_fails_on_the_real_removal(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture
):
    """The check runs against the fake server with its deviation, then without: what results.json records of the
    failure (message, reproducer) and of the answers (shapes) is all the gate reads."""
    shutil.copytree(
        SUITE, pytester.path / "conformance", ignore=shutil.ignore_patterns("__pycache__")
    )
    before = run_check(pytester, usage_and_service_tier(), "old")
    after = run_check(pytester, BASE, "new")
    recorded = json.loads(before.read_text())["tests"]
    assert [(t["check"], t["outcome"]) for t in recorded] == [(CHECK, "failed")] and recorded[0][
        "reproducer"
    ]
    capsys.readouterr()  # the inner sessions' output
    assert main(["compare", str(before), str(after)]) == 1
    out = capsys.readouterr().out
    pair = "(endpoint 9.9.9 -> endpoint 9.9.9)"  # the fake server's version, on both sides
    regressions, rest = out.split("REGRESSIONS (1):\n")[1].split("improvements (1):\n")
    improvements, changes = rest.split("other changes (1):\n")
    assert out.startswith("upgrade gate: FAIL: 1 regression\n")
    assert (
        regressions
        == f"  [api] {STREAM}: service_tier: string -> absent {pair}; removed: the baseline served it\n"
    )
    assert improvements == f"  [check] {CHECK}: failed -> passed {pair}; fixed\n"
    assert changes == (
        f"  [api] {STREAM}: usage: object -> absent {pair}; removed: the baseline served it; the end of a deviation:"
        f" {CHECK} failed on it in the baseline and passes now; clients that read usage without asking for it will miss"
        " it\n"
    )
