"""ARCHITECTURE.md's layering is enforced: its table of layers is the contract's list, import-linter's contracts
(pyproject.toml) hold, and they do catch an import that breaks them."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lint_imports() -> str:
    tool = shutil.which("lint-imports")
    if tool is None:
        pytest.skip("lint-imports is not installed (pip install import-linter, or the test extra)")
    return tool


def documented_layers(text: str) -> list[set[str]]:
    """The modules of each layer of ARCHITECTURE.md's table, top layer first, as the contract names them: the rows
    from ``values`` up to the row that may import everything (the stand-alone testing package below it is a contract
    of its own)."""
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ")]
    layers: list[set[str]] = []
    for _layer, package, _, imports in rows[1:]:
        modules = set()
        for path in re.findall(r"`([^`]+)`", package):
            path = path.removeprefix("pytest_infer/").removesuffix("/").removesuffix(".py")
            modules.add("pytest_infer." + path.replace("/", "."))
        layers.append(modules)
        if imports.strip() == "everything above":
            break
    return layers[::-1]


def contract_layers(pyproject: str) -> list[set[str]]:
    contract = tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"][0]
    return [{module.strip() for module in layer.split("|")} for layer in contract["layers"]]


def test_architecture_md_lists_the_layers_of_the_contract():
    documented = documented_layers((ROOT / "ARCHITECTURE.md").read_text())
    assert documented == contract_layers((ROOT / "pyproject.toml").read_text())


def test_a_layer_missing_from_architecture_md_is_told_apart():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    without_targets = "\n".join(line for line in text.splitlines() if not line.startswith("| targets |"))
    assert documented_layers(without_targets) != contract_layers((ROOT / "pyproject.toml").read_text())


def test_the_import_contracts_hold():
    run = subprocess.run([lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 4 kept, 0 broken." in run.stdout


def copy_with(tmp_path: Path, module: str, appended: str) -> Path:
    """A copy of the package and its configuration with ``appended`` at the end of one module."""
    shutil.copytree(ROOT / "pytest_infer", tmp_path / "pytest_infer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "pytest_infer" / module
    path.write_text(path.read_text() + appended)
    return tmp_path


def test_a_layer_importing_upwards_breaks_the_contract(tmp_path: Path):
    """The same contracts on a copy of the package where the results model imports the reporting layer."""
    copy_with(tmp_path, "results/model.py", "\nfrom ..reporting import terminal  # noqa: E402\n")
    run = subprocess.run(
        [lint_imports(), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pytest_infer.results.model -> pytest_infer.reporting.terminal" in run.stdout


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the test extra has it)")
    return found


@pytest.mark.parametrize(
    "command", [("check", "--no-cache"), ("format", "--check", "--no-cache")], ids=["lint", "format"]
)
def test_the_linter_and_formatter_pass_on_the_package_its_suites_and_tests(command: tuple[str, ...]):
    """Lines of at most 120 characters (E501) in the formatter's layout: the formatter is the one arbiter of style."""
    run = subprocess.run(
        [tool("ruff"), *command, "pytest_infer", "suites", "tests", "benchmarks", "scripts", "conftest.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_type_checker_passes_on_the_package_and_catches_a_wrong_type(tmp_path: Path):
    """One mypy run (the slowest tool here) on a copy of the package where a results field gets the wrong type: the
    injected error is the only one, so the package itself type-checks and the configuration catches a wrong type."""
    copy_with(
        tmp_path, "results/views.py", "\n\ndef _broken(results: SessionResults) -> int:\n    return results.targets\n"
    )
    run = subprocess.run(
        [tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert (
        len(errors) == 1
        and 'Incompatible return value type (got "dict[str, TargetRecord]", expected "int")' in errors[0]
    ), run.stdout[-4000:]
    assert "Found 1 error in 1 file" in run.stdout
