"""ARCHITECTURE.md's layering is enforced: import-linter's contracts (pyproject.toml) hold, and they
do catch an import that breaks them."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lint_imports() -> str:
    tool = shutil.which("lint-imports")
    if tool is None:
        pytest.skip("lint-imports is not installed (pip install import-linter, or the test extra)")
    return tool


def test_the_import_contracts_hold():
    run = subprocess.run([lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 2 kept, 0 broken." in run.stdout


def test_a_layer_importing_upwards_breaks_the_contract(tmp_path: Path):
    """The same contracts on a copy of the package where the results model imports the reporting layer."""
    shutil.copytree(ROOT / "pytest_infer", tmp_path / "pytest_infer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "pytest_infer" / "results" / "model.py"
    model.write_text(model.read_text() + "\nfrom ..reporting import terminal  # noqa: E402\n")
    run = subprocess.run([lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pytest_infer.results.model -> pytest_infer.reporting.terminal" in run.stdout
