"""What mutation testing left untested in gating/compare.py: explicit pairs, one-sided checks, the second
regression branch, several pairs and a suite table the baseline lacks."""

from __future__ import annotations

from results_factory import session

from pytest_infer.gating.compare import compare, pair_targets
from pytest_infer.table import Finding, Table

CHECK = "chat.stop_strings"
PAIR = "vllm 0.31.0 -> vllm 0.32.0"


def test_an_explicit_pair_naming_a_target_one_side_lacks_is_ignored():
    baseline, candidate = session("0.31.0"), session("0.32.0")
    assert pair_targets(baseline, candidate, {"vllm": "gone"}) == ([("vllm", "vllm")], [])
    assert pair_targets(baseline, candidate, {"gone": "vllm"}) == ([("vllm", "vllm")], [])


def test_a_check_run_on_one_side_only_is_a_step_with_every_field_named():
    """A passing check the candidate added is newly judged; one it dropped is a step away from a pass."""
    fewer = session("0.31.0")
    fewer.tests = [t for t in fewer.tests if t.check != CHECK]
    (added,) = compare(fewer, session("0.32.0")).findings
    assert (added.kind, added.area, added.pair, added.subject, added.before, added.after) == (
        "change",
        "check",
        PAIR,
        CHECK,
        "not run",
        "passed",
    )
    fewer = session("0.32.0")
    fewer.tests = [t for t in fewer.tests if t.check != CHECK]
    (dropped,) = compare(session("0.31.0"), fewer).findings
    assert (
        dropped.kind,
        dropped.area,
        dropped.pair,
        dropped.subject,
        dropped.before,
        dropped.after,
    ) == (
        "regression",
        "check",
        PAIR,
        CHECK,
        "passed",
        "not run",
    )


def test_a_regression_from_a_not_passing_outcome_without_a_message_has_no_detail():
    """``xfail -> not_run`` takes the second regression branch (the first is for a check that passed)."""
    (finding,) = compare(
        session("0.31.0", outcomes={CHECK: "xfail"}), session("0.32.0", outcomes={CHECK: "not_run"})
    ).findings
    assert (finding.kind, finding.detail) == ("regression", "")


def test_a_regression_from_a_not_passing_outcome_cuts_its_message_to_300_characters():
    candidate = session("0.32.0", outcomes={CHECK: "failed"})
    next(t for t in candidate.tests if t.check == CHECK).message = "x" * 400 + "\nsecond line"
    (finding,) = compare(session("0.31.0", outcomes={CHECK: "unsupported"}), candidate).findings
    assert (finding.kind, finding.detail) == ("regression", "x" * 300)


def test_every_pair_keeps_its_findings():
    baseline, candidate = (
        session("0.31.0", target="a"),
        session("0.32.0", target="a", outcomes={"chat.basic": "failed"}),
    )
    baseline.merge(session("0.31.0", target="b"))
    candidate.merge(session("0.32.0", target="b", outcomes={CHECK: "failed"}))
    gate = compare(baseline, candidate)
    assert gate.pairs == [("a", "a"), ("b", "b")]
    assert sorted(f.subject for f in gate.regressions) == ["chat.basic", CHECK]


class _NewTable(Table):
    """A suite's table that reads its baseline's without asking what type it is."""

    def to_json(self):
        return {"x": 1}

    def compare(self, baseline, pairing):
        return [
            Finding("change", "new", pairing.label, "table", baseline.to_json(), self.to_json())
        ]


def test_a_suite_table_the_baseline_lacks_is_compared_with_an_empty_table():
    candidate = session("0.32.0")
    candidate.tables["new"] = _NewTable()
    (finding,) = compare(session("0.31.0"), candidate).findings
    assert (finding.area, finding.before, finding.after) == ("new", {}, {"x": 1})


def test_an_exclusive_comparison_compares_the_explicit_pair_only():
    """A history gates two versions held in one file with many: the other targets are neither paired nor unpaired."""
    merged = session("0.31.0", target="a")
    for part in (session("0.32.0", target="b"), session("0.30.0", target="c")):
        merged.merge(part)
    exclusive = compare(merged, merged, pairs={"a": "b"}, exclusive=True)
    assert (exclusive.pairs, exclusive.unpaired) == ([("a", "b")], [])
    assert compare(merged, merged, pairs={"a": "b"}).pairs == [("a", "b"), ("c", "c")]
