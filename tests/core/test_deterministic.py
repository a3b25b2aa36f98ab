"""``--infer-deterministic``: each server launched in its engine's batch-invariant mode, where the
engine has one (vLLM's ``VLLM_BATCH_INVARIANT=1``, SGLang's ``--enable-deterministic-inference``);
a framework without one is a usage error naming those that have one. The consistency suite's side
(near-ties then fail) is in tests/consistency/test_suite_can_fail.py."""

from __future__ import annotations

import pytest

from pytest_infer.adapters import registry as adapters
from pytest_infer.adapters.base import Environment, LaunchRequest
from pytest_infer.models.tiny import TINY
from pytest_infer.options import InferOptions
from pytest_infer.targets import resolve_targets

ENGINE = Environment(label="test", python="/usr/bin/python3")


def spec_of(framework: str, deterministic: bool):
    (target,) = resolve_targets(
        InferOptions(
            frameworks=(framework,),
            environments={framework: (ENGINE,)},
            deterministic=deterministic,
        )
    )
    request = LaunchRequest("/m/tiny", "tiny", "127.0.0.1", 8000, ENGINE, builtin=TINY)
    spec = target.adapter.launch(request)
    return target, target.deterministic.apply(spec) if target.deterministic else spec


def test_vllm_is_launched_with_its_batch_invariant_switch_only_when_asked():
    plain_target, plain = spec_of("vllm", deterministic=False)
    target, spec = spec_of("vllm", deterministic=True)
    assert plain_target.deterministic is None and "VLLM_BATCH_INVARIANT" not in plain.env
    assert spec.env["VLLM_BATCH_INVARIANT"] == "1" and spec.argv == plain.argv
    assert "launched in its batch-invariant mode" in spec.notes


def test_sglang_is_launched_with_its_deterministic_inference_argument():
    _, plain = spec_of("sglang", deterministic=False)
    _, spec = spec_of("sglang", deterministic=True)
    assert spec.argv == [*plain.argv, "--enable-deterministic-inference"]


def test_a_framework_without_a_batch_invariant_mode_is_a_usage_error_naming_those_with_one():
    with pytest.raises(pytest.UsageError) as raised:
        spec_of("llamacpp", deterministic=True)
    assert str(raised.value) == (
        "--infer-deterministic: llama.cpp has no batch-invariant mode to launch it in; these have "
        "one: sglang, vllm"
    )
    assert {a.name for a in adapters.ADAPTERS.values() if a.deterministic} == {"sglang", "vllm"}
