"""An SLO profile's thresholds are set per model: a session's model the profile has no entry for stops the run before
any server starts, saying which models the profile was set for; the header names the model whose thresholds judge."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pytest_infer.models import GEMMA
from pytest_infer.slo.profiles import load_profile

from .test_suite import PROFILE, copy_suite, run_suite

CPU_ENGINES = ("vllm", "sglang", "transformers", "llamacpp")


def test_a_profile_without_the_sessions_model_is_a_usage_error_before_any_test(pytester):
    copy_suite(pytester)
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    # port 9 (discard) answers nothing: a run that got as far as a test would fail it as unreachable
    result = run_suite(pytester, "http://127.0.0.1:9", "--slo=test.yaml", "--infer-model=gemma-3-270m", ".")
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
    result.stdout.fnmatch_lines(["pytest-infer SLO profile: test (test.yaml), thresholds set for tiny"])


@pytest.mark.parametrize("framework", CPU_ENGINES)
def test_the_cpu_profile_has_measured_load_points_for_gemma_on_every_cpu_engine(framework):
    profile = load_profile("cpu")
    points = profile.load_points(GEMMA, framework)
    assert profile.thresholds_source == "measured" and GEMMA in profile.description
    assert [p.id for p in points] == ["c1", "c4"]
    for point in points:  # every point judges latency and throughput, and fails on any error
        assert {"ttft_p50_ms", "min_output_tokens_per_s"} <= set(point.thresholds), (framework, point)
        assert point.thresholds["max_error_share"] == 0, (framework, point)


def test_the_gemma_limits_are_the_ones_derived_from_the_stored_figures():
    """slo/cpu.yaml's gemma-3-270m limits per engine are what benchmarks/results/real-model/thresholds.py derives
    from the measured figures stored beside it: edit one without the other and this fails."""
    folder = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "real-model"
    spec = importlib.util.spec_from_file_location("thresholds", folder / "thresholds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    derived = module.derive(str(folder / "slo-figures.jsonl"))
    profile = load_profile("cpu")
    assert {fw for fw, _ in derived} == set(CPU_ENGINES)
    for (framework, point_id), limits in derived.items():
        (point,) = [p for p in profile.load_points(GEMMA, framework) if p.id == point_id]
        assert {k: point.thresholds[k] for k in limits} == limits, (framework, point_id)
