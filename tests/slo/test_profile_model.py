"""An SLO profile's thresholds are set per model: a session's model the profile has no entry for stops the run before
any server starts, saying which models the profile was set for; the header names the model whose thresholds judge."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path

import pytest

from pytest_infer.models.gemma import NAME as GEMMA
from pytest_infer.slo.metrics.catalogue import threshold
from pytest_infer.slo.profiles import load_profile

from .test_suite import PROFILE, copy_suite, run_suite

CPU_ENGINES = ("vllm", "sglang", "transformers", "llamacpp")


def test_a_profile_without_the_sessions_model_is_a_usage_error_before_any_test(pytester):
    copy_suite(pytester)
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    # port 9 (discard) answers nothing: a run that got as far as a test would fail it as unreachable
    result = run_suite(
        pytester, "http://127.0.0.1:9", "--slo=test.yaml", "--infer-model=gemma-3-270m", "."
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            "ERROR: --slo: test.yaml: profile 'test' has no load points for model 'gemma-3-270m' (its thresholds were"
            " set for: tiny); add an entry for it under models:*"
        ]
    )
    assert "test_other" not in result.stdout.str() and "Traceback" not in result.stderr.str()


def test_the_header_names_the_model_whose_thresholds_judge(pytester):
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    result = run_suite(pytester, "http://127.0.0.1:9", "--slo=test.yaml", "--collect-only")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["pytest-infer SLO profile: test (test.yaml), thresholds set for tiny"]
    )


def _thresholds_module():
    """benchmarks/results/real-model/thresholds.py, which derives the gemma-3-270m limits (not a package)."""
    spec = importlib.util.spec_from_file_location(
        "real_model_thresholds", REAL_MODEL / "thresholds.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


REAL_MODEL = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "real-model"
THRESHOLDS = _thresholds_module()
PER_ENGINE = ("ttft_p50_ms", "ttft_p90_ms", "tpot_p90_ms", "e2e_p90_ms", "min_output_tokens_per_s")


@pytest.mark.parametrize("framework", CPU_ENGINES)
def test_the_gemma_limits_are_the_ones_derived_from_the_stored_figures(framework):
    """slo/cpu.yaml's gemma-3-270m limits per engine are what thresholds.py derives from the runs stored beside it:
    an engine and load point with limits has exactly those; one without (fewer than 3 valid error-free runs) has
    none of the per-engine limits, and they are named as not set. Edit one side without the other and this fails."""
    derived = THRESHOLDS.derive(str(REAL_MODEL / "slo-figures.jsonl"))
    profile = load_profile("cpu")
    assert profile.thresholds_source == "measured" and GEMMA in profile.description
    points = profile.load_points(GEMMA, framework)
    assert [p.id for p in points] == ["c1", "c4"]
    for point in points:
        assert point.thresholds["max_error_share"] == 0 and point.thresholds["max_rss_gb"] == 16, (
            point
        )
        limits = derived.limits.get((framework, point.id))
        if limits is None:
            assert point.not_set == PER_ENGINE and not set(PER_ENGINE) & set(point.thresholds), (
                point
            )
        else:
            assert point.not_set == () and {k: point.thresholds[k] for k in PER_ENGINE} == limits, (
                point
            )


def _run(run: str, **figures) -> dict:
    base = {
        "framework": "llamacpp",
        "load_point": "c1",
        "verdict": "pass",
        "error_share": 0.0,
        "run": run,
    }
    return {**base, "ttft_p50_ms": 200.0, "ttft_p90_ms": 250.0, "tpot_p90_ms": 20.0, "e2e_p90_ms": 900.0,
            "output_tokens_per_s": 40.0, **figures}  # fmt: skip


def test_the_derivation_refuses_a_run_marked_invalid_and_one_with_errors():
    clean = [_run("a", ttft_p50_ms=180.0), _run("b"), _run("c", ttft_p50_ms=220.0)]
    invalid = _run("d", verdict="invalid", ttft_p50_ms=9000.0, output_tokens_per_s=1.0)
    errors = _run("e", error_share=0.25, ttft_p50_ms=9000.0, output_tokens_per_s=1.0)
    derived = THRESHOLDS.derive_runs([*clean, invalid, errors])
    assert derived.limits == THRESHOLDS.derive_runs(clean).limits  # the refused runs moved nothing
    assert derived.limits["llamacpp", "c1"] == {
        "ttft_p50_ms": 300, "ttft_p90_ms": 380, "tpot_p90_ms": 30, "e2e_p90_ms": 1400, "min_output_tokens_per_s": 26,
    }  # fmt: skip  # median x1.5 (200 -> 300, 250 -> 375 -> 380 outward), median / 1.5 (40 -> 26.7 -> 26 outward)
    assert (
        THRESHOLDS.refused(invalid) == "marked invalid"
        and THRESHOLDS.refused(errors) == "25% of its requests in error"
    )
    two = THRESHOLDS.derive_runs([*clean[:2], invalid, errors])
    assert two.limits == {}
    assert two.without["llamacpp", "c1"] == (
        "2 valid error-free runs of the 3 needed (refused: d: marked invalid; e: 25% of its requests in error)"
    )


def test_a_candidate_twice_as_slow_as_the_median_fails_every_limit():
    """Each limit is judged as the suite judges it (the threshold's own operator): the median itself passes, a run
    twice as slow (every latency x2, throughput /2) fails each one."""
    runs = [
        _run("a", ttft_p50_ms=150.0, output_tokens_per_s=35.0),
        _run("b"),
        _run("c", ttft_p50_ms=260.0),
    ]
    (limits,) = THRESHOLDS.derive_runs(runs).limits.values()
    median = {
        k: statistics.median(r[k] for r in runs)
        for k in (*THRESHOLDS.LATENCY, THRESHOLDS.THROUGHPUT)
    }
    figure = {k: median[k] for k in THRESHOLDS.LATENCY} | {
        "min_output_tokens_per_s": median["output_tokens_per_s"]
    }
    slower = {k: v * 2 for k, v in figure.items() if k in THRESHOLDS.LATENCY}
    slower["min_output_tokens_per_s"] = figure["min_output_tokens_per_s"] / 2
    assert all(threshold(k).holds(figure[k], limit) for k, limit in limits.items())
    assert [k for k, limit in limits.items() if threshold(k).holds(slower[k], limit)] == []
    assert len(limits) == 5


NOT_SET_PROFILE = """
name: test
hardware: {accelerator: cpu}
validity: {max_client_busy: 2.0, max_loop_lag_p99_ms: 10000, max_schedule_lag_p99_ms: 10000}
defaults: {api: chat, output_tokens: 8, input_tokens: 16, warmup_requests: 2, requests: 20, concurrency: 2}
models:
  tiny:
    load_points:
      - {id: c2, thresholds: {ttft_p50_ms: null, min_output_tokens_per_s: null, max_error_share: 0}}
    frameworks:
      vllm:
        c2: {thresholds: {ttft_p50_ms: 5000, min_output_tokens_per_s: 1}}
"""


def test_an_engine_without_its_own_limits_is_not_exercised_naming_them(pytester, paced_server):
    """A profile whose limits are per engine judges an engine it set none for on nothing of them: "no limits set",
    not exercised, never a pass on another engine's limits; the engine that has them passes on its own."""
    url = paced_server(30, 5)
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(NOT_SET_PROFILE)
    result = run_suite(pytester, url, "--slo=test.yaml", "--infer-framework=llamacpp", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*not exercised: no limits set for llamacpp on this profile (test, load point c2): ttft_p50_ms,"
         " min_output_tokens_per_s not judged; only max_error_share held*"]
    )  # fmt: skip
    entry = json.loads((pytester.path / "report" / "results.json").read_text())["slo"][0]
    assert entry["not_set"] == ["ttft_p50_ms", "min_output_tokens_per_s"] and entry[
        "thresholds"
    ] == {"max_error_share": 0}
    measured = run_suite(pytester, url, "--slo=test.yaml")  # run_suite's own --infer-framework=vllm
    measured.assert_outcomes(passed=1)
