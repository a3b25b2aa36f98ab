"""Every branch of the gate's check comparison, the result's round trip and its warnings, each pinned exactly
(these are what mutation testing found untested in gating/compare.py)."""
from __future__ import annotations

import pytest
from results_factory import session

from pytest_infer.gating.compare import GateResult, code_warnings, compare
from pytest_infer.gating.rules import parse_rules

CHECK = "chat.stop_strings"
TRANSITIONS = {  # baseline outcome, candidate outcome -> kind, detail
    ("passed", "failed"): ("regression", f"{CHECK} failed: expected X, got Y"),
    ("passed", "error"): ("regression", f"{CHECK} failed: expected X, got Y"),
    ("passed", "not_run"): ("regression", ""),
    ("passed", "unsupported"): ("regression", ""),
    ("xfail", "failed"): ("regression", f"{CHECK} failed: expected X, got Y"),
    ("unsupported", "error"): ("regression", f"{CHECK} failed: expected X, got Y"),
    ("failed", "passed"): ("improvement", "fixed"),
    ("error", "unsupported"): ("improvement", ""),
    ("not_run", "xfail"): ("improvement", ""),
    ("xfail", "fixed"): ("improvement", "known deviation fixed"),
    ("xfail", "passed"): ("improvement", "known deviation fixed"),
    ("unsupported", "passed"): ("improvement", "now supported"),
    ("failed", "error"): ("change", ""),
    ("passed", "xfail"): ("change", ""),
    ("passed", "not_exercised"): ("change", ""),
    ("not_exercised", "passed"): ("change", ""),
}


@pytest.mark.parametrize(("old", "new"), list(TRANSITIONS))
def test_each_outcome_transition_has_its_kind_and_detail(old, new):
    gate = compare(session("0.31.0", outcomes={CHECK: old}), session("0.32.0", outcomes={CHECK: new}))
    (finding,) = gate.findings
    assert (finding.kind, finding.detail) == TRANSITIONS[old, new]
    assert (finding.area, finding.subject, finding.before, finding.after, finding.pair) == ("check", CHECK, old, new, "vllm 0.31.0 -> vllm 0.32.0")
    assert finding.reproducer == (f"curl -sS http://127.0.0.1:8000/v1/{CHECK}" if new in ("failed", "error") else "")


def test_a_skipped_side_and_an_unchanged_outcome_say_nothing():
    for old, new in (("skipped", "failed"), ("passed", "skipped"), ("failed", "failed")):
        assert compare(session("0.31.0", outcomes={CHECK: old}), session("0.32.0", outcomes={CHECK: new})).findings == []


def test_a_check_the_candidate_added_is_a_change_unless_it_was_skipped():
    baseline = session("0.31.0")
    baseline.tests = [t for t in baseline.tests if t.check != CHECK]
    (finding,) = compare(baseline, session("0.32.0")).findings
    assert (finding.kind, finding.before, finding.after) == ("change", "not run", "passed")
    assert compare(baseline, session("0.32.0", outcomes={CHECK: "skipped"})).findings == []


def test_a_long_failure_message_is_cut_to_its_first_line_and_300_characters():
    candidate = session("0.32.0", outcomes={CHECK: "failed"})
    next(t for t in candidate.tests if t.check == CHECK).message = "x" * 400 + "\nsecond line"
    (finding,) = compare(session("0.31.0"), candidate).findings
    assert finding.detail == "x" * 300


def test_findings_come_regressions_first_then_improvements_noise_and_changes():
    baseline = session("0.31.0", outcomes={"chat.basic": "failed", CHECK: "failed"}, keywords={"enum": {"valid": 39, "invalid": 1}})
    candidate = session("0.32.0", outcomes={"chat.basic": "passed", "chat.n_choices": "failed", CHECK: "error"}, keywords={"enum": {"valid": 40}})
    assert [f.kind for f in compare(baseline, candidate).findings] == ["regression", "improvement", "noise", "change"]


def test_explicit_pairs_reach_the_comparison_and_alpha_reaches_the_tables():
    baseline = session("0.31.0", target="old")
    candidate = session("0.32.0", target="new", keywords={"enum": {"valid": 35, "invalid": 5}})
    candidate.targets.update(session("0.32.0", target="other").targets)
    gate = compare(baseline, candidate, pairs={"old": "new"})
    assert gate.pairs == [("old", "new")] and [f.subject for f in gate.regressions] == ["enum"]  # 0/40 -> 5/40: p = 0.027
    strict = compare(baseline, candidate, pairs={"old": "new"}, alpha=0.01)
    assert strict.regressions == [] and [f.kind for f in strict.findings] == ["noise"]
    assert "(alpha 0.01)" in strict.findings[0].detail


def test_the_verdict_counts_regressions_in_words():
    one = compare(session("0.31.0"), session("0.32.0", outcomes={CHECK: "failed"}))
    two = compare(session("0.31.0"), session("0.32.0", outcomes={CHECK: "failed", "chat.basic": "error"}))
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
    out.environment["git"] = {k: v for k, v in {"commit": commit, "describe": describe, "dirty": dirty}.items() if v is not None}
    return out


def test_code_warnings_name_both_commits_or_the_uncommitted_checkout():
    long_a, long_b = "a" * 40, "b" * 40
    assert code_warnings(git(long_a), git(long_b)) == [
        f"baseline and candidate ran different suite code ({'a' * 12} v {'b' * 12}): a difference may come from the suites, not the server"
    ]
    assert code_warnings(git(long_a, "v1"), git(long_b, "v2"))[0].startswith("baseline and candidate ran different suite code (v1 v v2)")
    uncommitted = ["a run came from a checkout with uncommitted changes: the suites may have differed between runs"]
    assert code_warnings(git(long_a, dirty=True), git(long_a)) == uncommitted
    assert code_warnings(git(long_a), git(long_a, dirty=True)) == uncommitted
    assert code_warnings(git(long_a), git(long_a)) == []
    assert code_warnings(git(None), git(long_b)) == [] and code_warnings(git(long_a), git(None)) == []
    no_git = session()
    del no_git.environment["git"]
    assert code_warnings(no_git, git(long_b, dirty=True)) == uncommitted and code_warnings(git(long_a, dirty=True), no_git) == uncommitted


def test_a_gate_result_with_rules_and_unpaired_targets_survives_its_round_trip():
    candidate = session("0.32.0")
    candidate.targets.update(session("5.0", target="transformers", framework="transformers").targets)
    gate = compare(session("0.31.0"), candidate, parse_rules("ttft_p99:10%"))
    assert gate.unpaired == ["candidate transformers"] and gate.rules
    assert GateResult.from_dict(gate.to_dict()) == gate


def test_a_check_only_one_side_ran_is_a_change_naming_the_side_unless_it_was_skipped():
    baseline, candidate = session("0.31.0", outcomes={"chat.basic": "skipped"}), session("0.32.0")
    candidate.tests = [t for t in candidate.tests if t.check not in ("chat.basic", CHECK)]
    (finding,) = compare(baseline, candidate).findings
    assert (finding.kind, finding.area, finding.pair, finding.subject, finding.before, finding.after) == (
        "change", "check", "vllm 0.31.0 -> vllm 0.32.0", CHECK, "passed", "not run")
