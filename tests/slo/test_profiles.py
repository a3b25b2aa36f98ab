"""SLO profiles: every bundled one loads; a bad one is refused with the file and the key named."""

from __future__ import annotations

import textwrap

import pytest

from pytest_infer.adapters import registry
from pytest_infer.load.hardware import Hardware
from pytest_infer.slo.profiles import ProfileError, available_profiles, load_profile

GOOD = """
name: mine
hardware: {accelerator: cpu}
defaults: {requests: 100, output_tokens: 16}
models:
  tiny:
    load_points:
      - {id: c1, concurrency: 1, thresholds: {ttft_p99_ms: 100, min_output_tokens_per_s: 10}}
      - {id: c4, concurrency: 4, requests: 120, thresholds: {ttft_p99_ms: 200}}
    frameworks:
      transformers:
        c4: {concurrency: 2, thresholds: {ttft_p99_ms: null, ttft_p50_ms: 900}}
"""


def write(tmp_path, text: str):
    path = tmp_path / "profile.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_bundled_profiles_all_load():
    names = set(available_profiles())
    assert {"a100", "h100", "h200", "l4", "rtx4090", "cpu"} <= names
    for name in names:
        profile = load_profile(name)
        assert profile.name == name
        for model in profile.models:
            assert profile.load_points(model, "vllm")


def test_a100_starts_from_the_published_figures():
    points = {p.id: p for p in load_profile("a100").load_points("Qwen/Qwen2.5-7B-Instruct", "vllm")}
    assert points["c32"].thresholds["min_output_tokens_per_s"] == pytest.approx(0.9 * 1450)
    tgi = {p.id: p for p in load_profile("a100").load_points("Qwen/Qwen2.5-7B-Instruct", "tgi")}
    assert tgi["c32"].thresholds["min_output_tokens_per_s"] == pytest.approx(0.9 * 1180)


def test_defaults_points_and_framework_overrides_merge(tmp_path):
    profile = load_profile(write(tmp_path, GOOD))
    vllm = {p.id: p for p in profile.load_points("tiny", "vllm")}
    assert vllm["c1"].load_spec().requests == 100 and vllm["c4"].load_spec().requests == 120
    assert vllm["c4"].load_spec().concurrency == 4 and vllm["c4"].thresholds == {"ttft_p99_ms": 200}
    hf = {p.id: p for p in profile.load_points("tiny", "transformers")}
    assert hf["c4"].load_spec().concurrency == 2 and hf["c4"].thresholds == {
        "ttft_p50_ms": 900
    }  # null drops a threshold
    assert (
        hf["c1"].workload(registry.get("transformers")).ignore_eos is False
        and hf["c1"].workload(registry.get("transformers")).extra_body == {}
    )
    assert vllm["c1"].workload(registry.get("vllm")).ignore_eos is True and vllm["c1"].workload(
        registry.get("vllm")
    ).extra_body == {"return_token_ids": True}
    with pytest.raises(ProfileError, match="has no load points for model 'llama'; it has: tiny"):
        profile.load_points("llama", "vllm")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("ttft_p99_ms: 100, min", "ttft_p99: 100, min"),
            "models.tiny.load_points[0].thresholds.ttft_p99: unknown threshold 'ttft_p99'",
        ),
        (
            ("ttft_p99_ms: 200", "ttft_p99_ms: fast"),
            "models.tiny.load_points[1].thresholds.ttft_p99_ms: 'fast' is not of type 'number'",
        ),
        (
            ("concurrency: 4,", "concurrency: 0,"),
            "models.tiny.load_points[1].concurrency: 0 is less than the minimum of 1",
        ),
        (("id: c4", "id: c1"), "models.tiny.load_points[1].id: duplicate load point id 'c1'"),
        (("transformers:", "tensorflow:"), "models.tiny.frameworks.tensorflow: unknown framework"),
        (
            ("        c4: {", "        c9: {"),
            "models.tiny.frameworks.transformers.c9: no load point 'c9' to override",
        ),
        (
            ("accelerator: cpu", "accelerator: tpu"),
            "hardware.accelerator: 'tpu' is not one of ['gpu', 'cpu']",
        ),
        (("accelerator: cpu", "accelerator: gpu"), "hardware: 'gpu' is a required property"),
        (
            ("defaults: {requests: 100", "defaults: {requets: 100"),
            "defaults: Additional properties are not allowed ('requets' was unexpected)",
        ),
        (
            ("id: c1, concurrency: 1,", "id: c1, mode: poisson,"),
            "models.tiny.load_points[0]: an open-loop (poisson) load point needs a rate",
        ),
    ],
)
def test_invalid_profile_names_file_and_key(tmp_path, edit, message):
    old, new = edit
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(info.value).startswith(f"{path}: invalid SLO profile:")
    assert message in str(info.value)


def test_yaml_syntax_error_names_the_file(tmp_path):
    path = write(tmp_path, "name: [unclosed\n")
    with pytest.raises(ProfileError, match=f"{path}: not valid YAML"):
        load_profile(path)


def gpu_host(name: str, count: int = 1, memory: float = 79.6) -> Hardware:
    return Hardware(
        "gpu", [{"name": name, "memory_gb": memory}] * count, driver="550.54", nvml="ok"
    )


def test_hardware_mismatch_is_explained():
    a100 = load_profile("a100")
    assert a100.hardware_mismatch(gpu_host("NVIDIA A100-SXM4-80GB")) is None
    assert "2 GPUs, not 1" in a100.hardware_mismatch(gpu_host("NVIDIA A100-SXM4-80GB", 2))
    assert "GPU NVIDIA H100 80GB HBM3 is not A100" in a100.hardware_mismatch(
        gpu_host("NVIDIA H100 80GB HBM3")
    )
    assert "39.4 GB per GPU, not 80" in a100.hardware_mismatch(
        gpu_host("NVIDIA A100-PCIE-40GB", memory=39.4)
    )
    assert "has no GPU visible to NVML (not installed)" in a100.hardware_mismatch(Hardware("cpu"))
    cpu = load_profile("cpu")
    assert cpu.hardware_mismatch(Hardware("cpu")) is None
    assert "for CPU-only hosts" in cpu.hardware_mismatch(gpu_host("NVIDIA L4", memory=22.5))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("thresholds: {ttft_p99_ms: 100, min_output_tokens_per_s: 10}", "thresholds: {}"),
            (
                "models.tiny.load_points[0].thresholds: load point 'c1' has no thresholds, so nothing would judge its"
                " figures"
            ),
        ),
        (
            (
                "thresholds: {ttft_p99_ms: null, ttft_p50_ms: 900}",
                "thresholds: {ttft_p99_ms: null}",
            ),
            (
                "models.tiny.frameworks.transformers.c4.thresholds: load point 'c4' has no thresholds for transformers,"
                " so nothing would judge"
            ),
        ),
        (
            (
                "id: c4, concurrency: 4, requests: 120, thresholds: {ttft_p99_ms: 200}",
                (
                    "id: c4, concurrency: 4, requests: 120, search: {start: 1, max: 8}, thresholds:"
                    " {min_capacity_concurrency: 2}"
                ),
            ),
            (
                "models.tiny.load_points[1].thresholds: the capacity search of load point 'c4' has no threshold to"
                " judge its probes by"
            ),
        ),
        (
            ("name: mine", "name: mine\nthresholds_source: guessed"),
            "thresholds_source: 'guessed' is not one of ['measured', 'estimated']",
        ),
    ],
)
def test_a_load_point_that_nothing_would_judge_is_refused(tmp_path, edit, message):
    """``all([])`` is true: a point without thresholds would pass with every request failed."""
    old, new = edit
    assert old in GOOD
    with pytest.raises(ProfileError) as info:
        load_profile(write(tmp_path, GOOD.replace(old, new, 1)))
    assert message in str(info.value)


def test_an_empty_point_stops_the_run_before_anything_starts(pytester: pytest.Pytester, tmp_path):
    path = write(tmp_path, GOOD.replace("thresholds: {ttft_p99_ms: 200}", "thresholds: {}"))
    pytester.makepyfile("def test_never_collected():\n    pass\n")
    result = pytester.runpytest(
        f"--slo={path}", "--infer-endpoint=http://127.0.0.1:9", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --slo: {path}: invalid SLO profile:",
            "*models.tiny.load_points?1?.thresholds: load point 'c4' has no thresholds*",
        ]
    )


def test_the_gpu_profiles_say_their_thresholds_are_estimates(tmp_path):
    sources = {name: load_profile(name).thresholds_source for name in available_profiles()}
    assert {name: sources[name] for name in ("a100", "h100", "h200", "l4", "rtx4090", "cpu")} == {
        "a100": "estimated",
        "h100": "estimated",
        "h200": "estimated",
        "l4": "estimated",
        "rtx4090": "estimated",
        "cpu": "measured",
    }
    assert (
        load_profile(write(tmp_path, GOOD)).thresholds_source is None
    )  # a profile that does not say is not marked
