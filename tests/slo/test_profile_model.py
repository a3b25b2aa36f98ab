"""An SLO profile's thresholds are set per model: a session's model the profile has no entry for stops the run before
any server starts, saying which models the profile was set for; the header names the model whose thresholds judge."""

from __future__ import annotations

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
