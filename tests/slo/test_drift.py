"""Timing across sessions: not gated without a drift calibration, gated beyond the calibrated drift with one;
timing measured in turns (interleaved) is judged as before, calibration or not."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_infer.cli import main
from pytest_infer.gating.compare import GateResult, compare
from pytest_infer.results.model import SessionResults, TargetRecord
from pytest_infer.slo.drift import CalibrationError, DriftCalibration, calibrate, largest_move_pct
from pytest_infer.slo.metrics.catalogue import parse
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings

RULES = parse_rules("output_tps:5%,ttft_p50:10%")
KEY = "cpu/c1"
TPS = parse("output_tokens_per_s")


def one_session(
    version: str,
    tps: float,
    *,
    session: str | None = "",
    interleaved: str = "",
    target: str = "vllm",
    seed: int = 0,
    runs: int = 6,
    verdict: str = "pass",
) -> SessionResults:
    """One session's load point ``c1``: ``runs`` runs about ``tps`` tokens/s (+-2%) and a TTFT that moves with it."""
    rng = random.Random(seed)
    results = SessionResults(
        plugin_version="0.1.0", environment={"git": {"commit": "abc123", "dirty": False}}
    )
    results.targets[target] = TargetRecord(
        id=target, framework="vllm", model="tiny", version=version, variant={"profile": "cpu"}
    )
    values = [tps * (1 + rng.uniform(-0.02, 0.02)) for _ in range(runs)]
    per_run = [{"output_tokens_per_s": v, "ttft_p50_ms": 40 * 300 / v} for v in values]
    entry = {
        "target": target,
        "profile": "cpu",
        "load_point": "c1",
        "concurrency": 1,
        "verdict": verdict,
        "runs": per_run,
        "metrics": {"output_tokens_per_s": sum(values) / runs},
    }
    if session is not None:
        entry["session"] = session or f"{version}-{seed}"
    if interleaved:
        entry["interleaved"] = {"id": interleaved, "targets": ["base", "cand"]}
    results.table("slo").add(entry)
    return results


def calibration(*session_tps: float) -> DriftCalibration:
    """A calibration from sessions of one version whose throughput settled at ``session_tps``."""
    return calibrate(
        [(f"s{i}.json", one_session("0.32.0", tps, seed=i)) for i, tps in enumerate(session_tps)]
    )


def test_a_a_across_sessions_with_a_35_percent_drift_and_no_calibration_is_shown_not_gated():
    baseline, candidate = (
        one_session("0.32.0", 536, seed=1),
        one_session("0.32.0", 350, seed=2),
    )  # the figures: -35%
    gate = compare(baseline, candidate, gate_settings(RULES))
    assert not gate.failed and gate.regressions == []
    assert (
        gate.verdict
        == "PASS: no regressions (2 timing moves across sessions not gated: no drift calibration for them)"
    )
    stored = gate.to_dict()
    assert GateResult.from_dict(stored).verdict == gate.verdict
    del stored["notes"]  # a gate stored before its notes had a key kept them in its verdict
    assert GateResult.from_dict(stored).verdict == gate.verdict
    assert gate.timing == [
        "vllm 0.32.0 -> vllm 0.32.0: separate sessions, not gated: no calibration"
    ]
    shown = {f.subject: (f.kind, f.detail) for f in gate.findings}
    kind, detail = shown["cpu/c1: output_tokens_per_s"]
    assert (
        kind == "change"
        and detail.startswith("+33.")
        and detail.endswith(
            "% worse, limit output_tps:5%; separate sessions, not gated: no calibration"
        )
    )
    # the same figures, the same session id on both sides: one session, measured one target after the other, is no
    # pairing either
    same = compare(
        one_session("0.32.0", 536, session="s"),
        one_session("0.32.0", 350, session="s"),
        gate_settings(RULES),
    )
    assert (
        same.timing
        == ["vllm 0.32.0 -> vllm 0.32.0: one session, in sequence, not gated: no calibration"]
        and not same.failed
    )


def test_results_from_before_sessions_were_recorded_count_as_separate_sessions():
    gate = compare(
        one_session("0.31.0", 536, session=None),
        one_session("0.32.0", 350, session=None),
        gate_settings(RULES),
    )
    assert not gate.failed and gate.timing == [
        "vllm 0.31.0 -> vllm 0.32.0: separate sessions, not gated: no calibration"
    ]


def test_calibration_is_the_largest_move_between_sessions_times_the_safety_factor():
    drift = calibration(
        500, 550, 400
    )  # throughput: at worst 400 after 550, 27% less; TTFT (~300*40/tps): 30 ms after 22, +37.5%
    tps, ttft = drift.drift(KEY, TPS), drift.drift(KEY, parse("ttft_p50_ms"))
    assert tps is not None and tps.sessions == 3 and tps.largest_pct == pytest.approx(27.3, abs=3)
    assert ttft is not None and ttft.largest_pct == pytest.approx(37.5, abs=4)
    assert tps.bound_pct == pytest.approx(tps.largest_pct * 1.5, abs=0.01)
    assert largest_move_pct([100.0, 110.0, 125.0], higher_is_better=False) == pytest.approx(25.0)
    assert largest_move_pct([100.0, 110.0, 125.0], higher_is_better=True) == pytest.approx(20.0)
    assert largest_move_pct([0.0, 0.0, 0.0], higher_is_better=False) == 0.0
    assert (
        largest_move_pct([0.0, 1.0, 2.0], higher_is_better=False) is None
    )  # no share of nothing: not calibrated, so not gated


def test_with_a_calibration_a_move_beyond_drift_plus_rule_fails_and_one_within_passes():
    drift = calibration(
        500, 540, 470
    )  # the runs of each session move +-2%, the sessions ~13% apart: bound ~20%
    bound = drift.drift(KEY, TPS).bound_pct
    assert 17 < bound < 23
    baseline = one_session("0.32.0", 500, seed=7)
    beyond = compare(
        baseline,
        one_session("0.33.0", 500 * (1 - (bound + 5 + 3) / 100), seed=8),
        gate_settings(RULES, drift),
    )
    (finding,) = [f for f in beyond.findings if f.subject.endswith("output_tokens_per_s")]
    assert beyond.failed and finding.kind == "regression"
    assert (
        f"limit output_tps:5% + calibrated drift {bound:g}% (separate sessions, calibration (3 sessions, largest move"
        " x1.5))" in finding.detail
    )
    assert "runs (n=6 v 6) against the other side moved by the drift, p=0.00" in finding.detail
    assert beyond.timing == [
        f"vllm 0.32.0 -> vllm 0.33.0: separate sessions, gated beyond the calibrated drift of {drift.describe()}"
    ]
    within = compare(
        baseline,
        one_session("0.33.0", 500 * (1 - (bound + 5 - 3) / 100), seed=8),
        gate_settings(RULES, drift),
    )
    (finding,) = [f for f in within.findings if f.subject.endswith("output_tokens_per_s")]
    assert (
        not within.failed
        and finding.kind == "noise"
        and finding.detail.endswith("within the rule and the drift between sessions")
    )
    better = compare(
        baseline, one_session("0.33.0", 500 * 1.5, seed=8), gate_settings(RULES, drift)
    )
    assert not better.failed and {f.kind for f in better.findings} == {"improvement"}


def test_beyond_the_drift_but_not_significantly_so_is_noise():
    """Medians 40% apart with a 20% calibrated drift, but the candidate's runs spread from 150 to 560: once the
    baseline is moved by the drift, the runs overlap and the test cannot call the rest a regression."""
    drift = calibration(500, 540, 470)
    baseline, candidate = one_session("0.32.0", 500, seed=7), one_session("0.33.0", 300, seed=8)
    candidate.table("slo").entries[0]["runs"] = [
        {"output_tokens_per_s": v} for v in (150, 560, 200, 540, 250, 350)
    ]
    (finding,) = [
        f
        for f in compare(baseline, candidate, gate_settings(RULES, drift)).findings
        if f.subject.endswith("output_tokens_per_s")
    ]
    assert (
        finding.kind == "noise"
        and "against the other side moved by the drift" in finding.detail
        and "not significant" in finding.detail
    )


def test_a_figure_the_calibration_does_not_hold_is_not_gated_and_says_why():
    drift = DriftCalibration({"cpu/c64": {}}, ["a", "b", "c"], source="calibration.json")
    gate = compare(
        one_session("0.32.0", 536), one_session("0.33.0", 300), gate_settings(RULES, drift)
    )
    assert not gate.failed
    assert any(
        f.detail.endswith(
            "not gated: calibration (calibration.json, 3 sessions, largest move x1.5) has no drift for this figure"
        )
        for f in gate.findings
    )


def _interleaved(before: list[float], after: list[float]) -> tuple[SessionResults, SessionResults]:
    sides = []
    for values, target in ((before, "base"), (after, "cand")):
        results = one_session("0.32.0", 1, target=target, interleaved="m1", session="s1")
        results.table("slo").entries[0]["runs"] = [{"output_tokens_per_s": v} for v in values]
        sides.append(results)
    return sides[0], sides[1]


def test_interleaved_timing_is_judged_as_before_with_or_without_a_calibration():
    """The machine slowed by a third during the session; the candidate is 10% slower in every pair: a regression
    in turns, whatever a calibration says about drift between sessions (it cancels inside the pairs)."""
    drift = [600, 540, 470, 400, 380, 350]
    before, after = (
        drift,
        [v * 0.9 * (1 + e) for v, e in zip(drift, (0.01, -0.01, 0.005, 0, 0.02, -0.02))],
    )
    rules = parse_rules("output_tps:5%")
    plain = compare(*_interleaved(before, after), gate_settings(rules), pairs={"base": "cand"})
    wide = compare(
        *_interleaved(before, after),
        gate_settings(rules, calibration(300, 500, 400)),
        pairs={"base": "cand"},
    )
    assert plain.findings == wide.findings
    for gate in (plain, wide):
        (finding,) = gate.findings
        assert finding.kind == "regression" and finding.detail.endswith(
            "% worse, limit output_tps:5%; paired runs (n=6, interleaved), p=0.0156"
        )
        assert gate.timing == ["vllm 0.32.0 -> vllm 0.32.0: interleaved (measured in turns)"]


def test_calibrate_refuses_too_few_sessions_and_mixed_targets_and_skips_invalid_points():
    with pytest.raises(CalibrationError, match="2 session.*at least 3"):
        calibrate([(f"s{i}.json", one_session("0.32.0", 500, seed=i)) for i in range(2)])
    mixed = one_session(
        "0.32.0", 500, seed=1, session="m"
    )  # one session that measured two versions
    mixed.table("slo").merge(
        one_session("0.31.0", 400, seed=1, target="old", session="m").table("slo")
    )
    parts = [
        ("m.json", mixed),
        *((f"s{i}.json", one_session("0.32.0", 500, seed=i)) for i in (2, 3)),
    ]
    with pytest.raises(CalibrationError, match="several targets .*old, vllm.*--target"):
        calibrate(parts)
    assert calibrate(parts, target="vllm").drift(KEY, TPS) is not None
    invalid = [
        (
            f"s{i}.json",
            one_session("0.32.0", 500 + 100 * i, seed=i, verdict="invalid" if i == 0 else "pass"),
        )
        for i in range(4)
    ]
    assert calibrate(invalid).drift(KEY, TPS).sessions == 3
    with pytest.raises(CalibrationError, match="below 1"):
        calibrate(invalid, safety=0.5)


def test_sessions_merged_into_one_file_stay_separate_sessions():
    merged = one_session("0.32.0", 500, seed=1)
    for seed, tps in ((2, 560), (3, 470)):
        merged.table("slo").merge(one_session("0.32.0", tps, seed=seed).table("slo"))
    drift = calibrate([("merged.json", merged)])
    assert drift.sessions == [
        "merged.json#0.32.0-1",
        "merged.json#0.32.0-2",
        "merged.json#0.32.0-3",
    ]


def test_calibrate_and_compare_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture):
    for i, tps in enumerate((500, 540, 470)):
        one_session("0.32.0", tps, seed=i).write(tmp_path / "same" / f"{i}.json")
    one_session("0.32.0", 500, seed=7).write(tmp_path / "base.json")
    one_session("0.33.0", 330, seed=8).write(tmp_path / "cand.json")
    calibration_file = tmp_path / "calibration.json"
    assert main(["calibrate", str(tmp_path / "same"), "-o", str(calibration_file)]) == 0
    out = capsys.readouterr().out
    assert (
        "cpu/c1: output_tokens_per_s 17.8" in out
        and "3 sessions; tolerated drift = largest move between two sessions x 1.5" in out
    )
    saved = json.loads(calibration_file.read_text())
    assert (
        saved["kind"] == "pytest-infer drift calibration"
        and "largest relative move" in saved["method"]
    )
    compare_args = [
        "compare",
        str(tmp_path / "base.json"),
        str(tmp_path / "cand.json"),
        "--fail-on",
        "output_tps:5%",
    ]
    assert main(compare_args) == 0
    assert "separate sessions, not gated: no calibration" in capsys.readouterr().out
    assert main([*compare_args, "--calibration", str(calibration_file)]) == 1
    out = capsys.readouterr().out
    assert (
        "upgrade gate: FAIL: 1 regression" in out
        and "timing: vllm 0.32.0 -> vllm 0.33.0: separate sessions, gated beyond the calibrated drift of calibration"
        f" ({calibration_file}"
        in out
    )
    assert main([*compare_args, "--calibration", str(tmp_path / "base.json")]) == 2
    assert "--calibration: " in capsys.readouterr().err
    assert main(["calibrate", str(tmp_path / "base.json"), "-o", str(tmp_path / "x.json")]) == 2
    assert "at least 3" in capsys.readouterr().err
