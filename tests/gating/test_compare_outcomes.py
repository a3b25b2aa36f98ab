"""Every branch of the gate's check comparison, the result's round trip and its warnings, each pinned exactly
(these are what mutation testing found untested in gating/compare.py)."""

from __future__ import annotations

import dataclasses

import pytest
from results_factory import session

from pytest_infer.gating.compare import GateResult, code_warnings, compare
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings

CHECK = "chat.stop_strings"
FAILURE = f"{CHECK} failed: expected X, got Y"  # the factory's message of a failed or errored test
TRANSITIONS = {  # baseline outcome, candidate outcome -> kind, detail
    # every step away from a pass is a regression: a check that stopped judging no longer vouches for the server
    ("passed", "failed"): ("regression", FAILURE),
    ("passed", "error"): ("regression", FAILURE),
    ("passed", "not_run"): ("regression", ""),
    ("passed", "unsupported"): ("regression", ""),
    ("passed", "xfail"): ("regression", ""),
    ("passed", "not_exercised"): ("regression", ""),
    ("passed", "inconclusive"): ("regression", ""),
    ("passed", "skipped"): ("regression", ""),
    ("fixed", "xfail"): ("regression", ""),  # a declared deviation that had gone came back
    ("fixed", "skipped"): ("regression", ""),
    # a step into a failure from anything but a failure
    ("xfail", "failed"): ("regression", FAILURE),
    ("unsupported", "error"): ("regression", FAILURE),
    ("inconclusive", "error"): ("regression", FAILURE),
    ("xfail", "not_run"): ("regression", ""),
    # a failure of a check the baseline never judged fails the gate too, and says so
    ("skipped", "failed"): (
        "regression",
        f"fails; the baseline never judged it (was skipped): {FAILURE}",
    ),
    ("not_exercised", "failed"): (
        "regression",
        f"fails; the baseline never judged it (was not_exercised): {FAILURE}",
    ),
    ("error", "failed"): (
        "regression",
        f"fails; the baseline never judged it (was error): {FAILURE}",
    ),
    ("not_run", "failed"): (
        "regression",
        f"fails; the baseline never judged it (was not_run): {FAILURE}",
    ),
    # every step into a pass from a verdict is an improvement
    ("failed", "passed"): ("improvement", "fixed"),
    ("failed", "fixed"): ("improvement", "fixed"),
    ("xfail", "fixed"): ("improvement", "known deviation fixed"),
    ("xfail", "passed"): ("improvement", "known deviation fixed"),
    ("unsupported", "passed"): ("improvement", "now supported"),
    # a failure that became a declared or unsupported one
    ("failed", "unsupported"): ("improvement", ""),
    ("failed", "xfail"): ("improvement", ""),
    # a verdict where the baseline judged nothing: newly judged, not an improvement (nothing was fixed)
    ("error", "fixed"): ("change", "newly judged: fixed; the baseline never judged it (was error)"),
    ("skipped", "passed"): (
        "change",
        "newly judged: passed; the baseline never judged it (was skipped)",
    ),
    ("inconclusive", "passed"): (
        "change",
        "newly judged: passed; the baseline never judged it (was inconclusive)",
    ),
    ("not_exercised", "passed"): (
        "change",
        "newly judged: passed; the baseline never judged it (was not_exercised)",
    ),
    ("not_run", "passed"): (
        "change",
        "newly judged: passed; the baseline never judged it (was not_run)",
    ),
    ("error", "unsupported"): (
        "change",
        "newly judged: unsupported; the baseline never judged it (was error)",
    ),
    ("not_run", "xfail"): (
        "change",
        "newly judged: xfail; the baseline never judged it (was not_run)",
    ),
    # a verdict the baseline reached and the candidate did not: missing, so the gate is INCOMPLETE, never a pass
    ("failed", "error"): ("missing", f"judged by the baseline, not by the candidate: {FAILURE}"),
    ("failed", "skipped"): ("missing", "judged by the baseline, not by the candidate: no verdict"),
    ("unsupported", "skipped"): (
        "missing",
        "judged by the baseline, not by the candidate: no verdict",
    ),
    ("xfail", "inconclusive"): (
        "missing",
        "judged by the baseline, not by the candidate: no verdict",
    ),
    # the rest are changes
    ("xfail", "unsupported"): ("change", ""),
    ("skipped", "inconclusive"): ("change", ""),
    ("inconclusive", "not_exercised"): ("change", ""),
    ("passed", "fixed"): (
        "change",
        "",
    ),  # passes on both sides; the candidate now declares it a known deviation
}


@pytest.mark.parametrize(("old", "new"), list(TRANSITIONS))
def test_each_outcome_transition_has_its_kind_and_detail(old, new):
    gate = compare(
        session("0.31.0", outcomes={CHECK: old}), session("0.32.0", outcomes={CHECK: new})
    )
    (finding,) = gate.findings
    assert (finding.kind, finding.detail) == TRANSITIONS[old, new]
    assert (finding.area, finding.subject, finding.before, finding.after, finding.pair) == (
        "check",
        CHECK,
        old,
        new,
        "vllm 0.31.0 -> vllm 0.32.0",
    )
    assert finding.line().startswith(
        f"[check] {CHECK}: {old} -> {new} (vllm 0.31.0 -> vllm 0.32.0)"
    )  # the step, named
    assert finding.reproducer == (
        f"curl -sS http://127.0.0.1:8000/v1/{CHECK}" if new in ("failed", "error") else ""
    )
    assert gate.verdict.startswith("FAIL") == (TRANSITIONS[old, new][0] == "regression")
    assert gate.verdict.startswith("INCOMPLETE") == (TRANSITIONS[old, new][0] == "missing")


@pytest.mark.parametrize(
    "outcome",
    [
        "passed",
        "fixed",
        "failed",
        "error",
        "not_run",
        "unsupported",
        "xfail",
        "not_exercised",
        "inconclusive",
        "skipped",
    ],
)
def test_an_unchanged_outcome_says_nothing(outcome):
    gate = compare(
        session("0.31.0", outcomes={CHECK: outcome}), session("0.32.0", outcomes={CHECK: outcome})
    )
    assert gate.findings == [] and gate.verdict == "PASS: no regressions"


def test_the_reason_of_a_step_away_from_a_pass_is_the_finding_detail():
    """A skip, an inconclusive check, an unsupported feature: the reason the candidate gave is what the reviewer
    reads."""
    for outcome, reason in (
        ("skipped", "Skipped: needs a real model"),
        ("inconclusive", "inconclusive: the model never ended its JSON"),
        ("unsupported", "unsupported: logprobs: not offered"),
    ):
        candidate = session("0.32.0", outcomes={CHECK: outcome})
        next(t for t in candidate.tests if t.check == CHECK).message = f"{reason}\nmore"
        (finding,) = compare(session("0.31.0"), candidate).findings
        assert (finding.kind, finding.before, finding.after, finding.detail) == (
            "regression",
            "passed",
            outcome,
            reason,
        )


def xfail_under(version: str, declaration: str | None):
    results = session(version, outcomes={CHECK: "xfail"})
    if declaration is not None:
        next(t for t in results.tests if t.check == CHECK).extra["xfail"] = declaration
    return results


def test_an_xfail_under_another_declaration_is_a_change_and_under_the_same_one_says_nothing():
    old, new = (
        "known deviation: stop strings ignored (vllm#1)",
        "known deviation: stop strings cut late (vllm#2)",
    )
    (finding,) = compare(xfail_under("0.31.0", old), xfail_under("0.32.0", new)).findings
    assert (finding.kind, finding.before, finding.after) == ("change", "xfail", "xfail")
    assert finding.detail == f"expected-failure declaration changed: {old!r} -> {new!r}"
    assert compare(xfail_under("0.31.0", old), xfail_under("0.32.0", old)).findings == []
    assert (
        compare(xfail_under("0.31.0", None), xfail_under("0.32.0", new)).findings == []
    )  # an old file records none


def test_a_long_failure_message_is_cut_to_its_first_line_and_300_characters():
    candidate = session("0.32.0", outcomes={CHECK: "failed"})
    next(t for t in candidate.tests if t.check == CHECK).message = "x" * 400 + "\nsecond line"
    (finding,) = compare(session("0.31.0"), candidate).findings
    assert finding.detail == "x" * 300


def test_findings_come_regressions_first_then_missing_improvements_noise_and_changes():
    baseline = session(
        "0.31.0",
        outcomes={"chat.basic": "failed", CHECK: "failed"},
        keywords={"enum": {"valid": 39, "invalid": 1}},
    )
    candidate = session(
        "0.32.0",
        outcomes={
            "chat.basic": "passed",
            "chat.n_choices": "failed",
            CHECK: "error",
            "chat.stream_matches": "skipped",
        },
        keywords={"enum": {"valid": 40}},
    )
    baseline.tests[1].outcome = "skipped"  # chat.stream_matches: skipped -> skipped says nothing
    candidate.tests.append(
        dataclasses.replace(candidate.tests[1], nodeid="other", check="chat.new", outcome="passed")
    )
    assert [f.kind for f in compare(baseline, candidate).findings] == [
        "regression",
        "missing",
        "improvement",
        "noise",
        "change",
    ]


def test_explicit_pairs_reach_the_comparison_and_alpha_reaches_the_tables():
    baseline = session("0.31.0", target="old")
    candidate = session("0.32.0", target="new", keywords={"enum": {"valid": 35, "invalid": 5}})
    candidate.targets.update(session("0.32.0", target="other").targets)
    gate = compare(baseline, candidate, pairs={"old": "new"})
    assert gate.pairs == [("old", "new")] and [f.subject for f in gate.regressions] == [
        "enum"
    ]  # 0/40 -> 5/40: p = 0.027
    strict = compare(baseline, candidate, pairs={"old": "new"}, alpha=0.01)
    assert strict.regressions == [] and [f.kind for f in strict.findings] == ["noise"]
    assert "(alpha 0.01)" in strict.findings[0].detail


def test_the_verdict_counts_regressions_in_words():
    one = compare(session("0.31.0"), session("0.32.0", outcomes={CHECK: "failed"}))
    two = compare(
        session("0.31.0"), session("0.32.0", outcomes={CHECK: "failed", "chat.basic": "error"})
    )
    assert (one.verdict, two.verdict) == ("FAIL: 1 regression", "FAIL: 2 regressions")
    assert GateResult().verdict.startswith("NO COMPARISON") and not GateResult().failed


def test_a_gate_result_survives_its_round_trip_through_json():
    gate = compare(session("0.31.0"), session("0.32.0", outcomes={CHECK: "failed"}))
    gate.warnings.append("w")
    data = gate.to_dict()
    assert data["verdict"] == "FAIL: 1 regression" and data["failed"] is True
    again = GateResult.from_dict(data)
    assert again == gate and again.pairs == [("vllm", "vllm")] and isinstance(again.pairs[0], tuple)
    assert GateResult.from_dict({}) == GateResult()


def git(commit=None, describe=None, dirty=False):
    out = session()
    out.environment["git"] = {
        k: v
        for k, v in {"commit": commit, "describe": describe, "dirty": dirty}.items()
        if v is not None
    }
    return out


def test_code_warnings_name_both_commits_or_the_uncommitted_checkout():
    long_a, long_b = "a" * 40, "b" * 40
    assert code_warnings(git(long_a), git(long_b)) == [
        f"baseline and candidate ran different suite code ({'a' * 12} v {'b' * 12}): a difference may come from the"
        " suites, not the server"
    ]
    assert code_warnings(git(long_a, "v1"), git(long_b, "v2"))[0].startswith(
        "baseline and candidate ran different suite code (v1 v v2)"
    )
    uncommitted = [
        "a run came from a checkout with uncommitted changes: the suites may have differed between runs"
    ]
    assert code_warnings(git(long_a, dirty=True), git(long_a)) == uncommitted
    assert code_warnings(git(long_a), git(long_a, dirty=True)) == uncommitted
    assert code_warnings(git(long_a), git(long_a)) == []
    assert (
        code_warnings(git(None), git(long_b)) == [] and code_warnings(git(long_a), git(None)) == []
    )
    no_git = session()
    del no_git.environment["git"]
    assert (
        code_warnings(no_git, git(long_b, dirty=True)) == uncommitted
        and code_warnings(git(long_a, dirty=True), no_git) == uncommitted
    )


def test_a_gate_result_with_rules_and_unpaired_targets_survives_its_round_trip():
    candidate = session("0.32.0")
    candidate.targets.update(
        session("5.0", target="transformers", framework="transformers").targets
    )
    gate = compare(session("0.31.0"), candidate, gate_settings(parse_rules("ttft_p99:10%")))
    assert gate.unpaired == ["candidate transformers"] and gate.rules
    assert GateResult.from_dict(gate.to_dict()) == gate


def without(results, *checks):
    results.tests = [t for t in results.tests if t.check not in checks]
    return results


@pytest.mark.parametrize(
    ("old", "new", "kind", "detail"),
    [
        (
            "passed",
            None,
            "regression",
            "the candidate did not run it",
        ),  # a pass that went away is a step away from a pass
        ("fixed", None, "regression", "the candidate did not run it"),
        ("skipped", None, "change", "the candidate did not run it"),
        (
            "failed",
            None,
            "missing",
            "judged by the baseline, not by the candidate: the candidate did not run it",
        ),
        (
            None,
            "passed",
            "change",
            "newly judged: passed; the baseline never judged it (was not run)",
        ),
        (None, "skipped", "change", "the baseline did not run it"),
        (
            None,
            "failed",
            "regression",
            f"fails; the baseline never judged it (was not run): {FAILURE}",
        ),  # never judged before: not known to have got worse, and no pass of the gate either
    ],
)
def test_a_check_only_one_side_ran_is_a_step_from_or_to_not_run(old, new, kind, detail):
    baseline = (
        session("0.31.0", outcomes={CHECK: old}) if old else without(session("0.31.0"), CHECK)
    )
    candidate = (
        session("0.32.0", outcomes={CHECK: new}) if new else without(session("0.32.0"), CHECK)
    )
    (finding,) = compare(baseline, candidate).findings
    assert (
        finding.kind,
        finding.area,
        finding.pair,
        finding.subject,
        finding.before,
        finding.after,
        finding.detail,
    ) == (
        kind,
        "check",
        "vllm 0.31.0 -> vllm 0.32.0",
        CHECK,
        old or "not run",
        new or "not run",
        detail,
    )
