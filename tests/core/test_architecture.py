"""ARCHITECTURE.md's layering is enforced: its table of layers is the contract's list, import-linter's contracts
(pyproject.toml) hold, and they do catch an import that breaks them."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_infer.paths import cache_dir

ROOT = Path(__file__).resolve().parents[2]


def lint_imports() -> str:
    tool = shutil.which("lint-imports")
    if tool is None:
        pytest.skip("lint-imports is not installed (pip install import-linter, or the test extra)")
    return tool


STACKS = {"run": "the run's layers", "comparison": "the comparison's layers"}


def documented_layers(text: str, stack: str) -> list[set[str]]:
    """The modules of each layer of one stack in ARCHITECTURE.md's table, top layer first, as the contract names
    them: the rows of that stack or of both, from ``values`` up to the row that may import everything (the
    stand-alone testing package below it is a contract of its own)."""
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ")]
    layers: list[set[str]] = []
    for _layer, where, package, _, imports in rows[1:]:
        if where.strip() not in ("both", stack):
            continue
        modules = set()
        for path in re.findall(r"`([^`]+)`", package):
            path = path.removeprefix("pytest_infer/").removesuffix("/").removesuffix(".py")
            modules.add("pytest_infer." + path.replace("/", "."))
        layers.append(modules)
        if imports.strip() == "everything above":
            break
    return layers[::-1]


def contract_layers(pyproject: str, name: str) -> list[set[str]]:
    (contract,) = [
        c
        for c in tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]
        if c["name"] == name
    ]
    return [{module.strip() for module in layer.split("|")} for layer in contract["layers"]]


@pytest.mark.parametrize("stack", STACKS)
def test_architecture_md_lists_the_layers_of_the_contracts(stack: str):
    documented = documented_layers((ROOT / "ARCHITECTURE.md").read_text(), stack)
    assert documented == contract_layers((ROOT / "pyproject.toml").read_text(), STACKS[stack])


def test_a_layer_missing_from_architecture_md_is_told_apart():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    without_targets = "\n".join(
        line for line in text.splitlines() if not line.startswith("| targets |")
    )
    assert documented_layers(without_targets, "run") != contract_layers(
        (ROOT / "pyproject.toml").read_text(), STACKS["run"]
    )


def test_a_layer_in_the_wrong_stack_is_told_apart():
    """Gating listed in the run's stack is a claim the contracts do not make: the two stacks import nothing of each
    other."""
    text = (
        (ROOT / "ARCHITECTURE.md")
        .read_text()
        .replace("| gating | comparison |", "| gating | run |")
    )
    assert documented_layers(text, "run") != contract_layers(
        (ROOT / "pyproject.toml").read_text(), STACKS["run"]
    )


ARCHITECTURE_WORDS = (
    1100  # one pass: the layers, the contracts, where each concept lives, a request's path
)


def too_long(text: str) -> list[str]:
    """A message when ARCHITECTURE.md outgrows one reading; its history belongs in CHANGELOG.md."""
    n = len(text.split())
    return (
        [f"ARCHITECTURE.md has {n} words, over {ARCHITECTURE_WORDS}"]
        if n > ARCHITECTURE_WORDS
        else []
    )


def test_architecture_md_reads_in_one_pass():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    assert too_long(text) == []
    assert too_long(text + text) != []


def test_the_import_contracts_hold():
    run = subprocess.run(
        [lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 11 kept, 0 broken." in run.stdout


def copy_with(tmp_path: Path, module: str, appended: str) -> Path:
    """A copy of the package and its configuration with ``appended`` at the end of one module."""
    shutil.copytree(
        ROOT / "pytest_infer",
        tmp_path / "pytest_infer",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "pytest_infer" / module
    path.write_text(path.read_text() + appended)
    return tmp_path


def lint_copy(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on a copy of the package (``copy_with``), the copy alone on the import path."""
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    command = [lint_imports(), "--no-cache"]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300, env=env)


def test_a_layer_importing_upwards_breaks_the_contract(tmp_path: Path):
    """The same contracts on a copy of the package where the results model imports the reporting layer."""
    copy_with(tmp_path, "results/model.py", "\nfrom ..reporting import terminal  # noqa: E402\n")
    run = lint_copy(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pytest_infer.results.model -> pytest_infer.reporting.terminal" in run.stdout


@pytest.mark.parametrize(
    ("module", "appended", "broken"),
    [
        (
            "session.py",
            "from .gating import compare",
            "the run imports no part of the comparison BROKEN",
        ),
        (
            "gating/compare.py",
            "from ..targets import Target",
            "the comparison imports no part of the run BROKEN",
        ),
        (
            "reporting/terminal.py",
            "from .outputs import write_renderings",
            "the reports over the renderers BROKEN",
        ),
        (
            "conformance/context.py",
            "from .checks import chat",
            "the conformance suite's glue over its checks BROKEN",
        ),
        (
            "structured/table.py",
            "from .plugin import structured_key",
            "the structured suite's glue over its machinery",
        ),
        (
            "vendor/store.py",
            "from .site import render_site",
            "the vendor service's commands over its parts BROKEN",
        ),
    ],
    ids=[
        "run-imports-gate",
        "gate-imports-run",
        "renderer-imports-outputs",
        "context-imports-checks",
        "table-plugin",
        "vendor-store-imports-site",
    ],
)
def test_each_stack_and_inner_contract_catches_its_own_break(
    tmp_path: Path, module: str, appended: str, broken: str
):
    """The two stacks' independence and the inner layers of the reports and the suites, each on a copy of the package
    where one module imports what its contract forbids (the circles that function-level imports once hid)."""
    copy_with(tmp_path, module, f"\n{appended}  # noqa: E402, F401\n")
    run = lint_copy(tmp_path)
    assert run.returncode == 1 and broken in run.stdout, run.stdout[-3000:]


CIRCLES = """
import json, sys
import grimp

graph = grimp.build_graph("pytest_infer", include_external_packages=False)
imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
order, low, stack, circles = {}, {}, [], []


def visit(module):
    order[module] = low[module] = len(order)
    stack.append(module)
    for imported in imports[module]:
        if imported not in order:
            visit(imported)
            low[module] = min(low[module], low[imported])
        elif imported in stack:
            low[module] = min(low[module], order[imported])
    if low[module] == order[module]:
        part = stack[stack.index(module):]
        del stack[stack.index(module):]
        if len(part) > 1:
            circles.append(sorted(part))


sys.setrecursionlimit(10000)
for module in sorted(imports):
    if module not in order:
        visit(module)
print(json.dumps(circles))
"""


def import_circles(root: Path) -> list[list[str]]:
    """The package's import circles (strongly connected modules), TYPE_CHECKING imports and imports inside
    functions included: a circle that a function-level import hides is still one."""
    pytest.importorskip("grimp")
    run = subprocess.run(
        [sys.executable, "-c", CIRCLES], cwd=root, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    return json.loads(run.stdout)


def test_no_module_imports_itself_back_through_others(tmp_path: Path):
    assert import_circles(ROOT) == []
    copy_with(
        tmp_path,
        "reporting/terminal.py",
        "\n\ndef _late():\n    from .outputs import write_renderings\n",
    )
    assert [c for c in import_circles(tmp_path) if "pytest_infer.reporting.terminal" in c] == [
        [
            "pytest_infer.reporting.html",
            "pytest_infer.reporting.markdown",
            "pytest_infer.reporting.outputs",
            "pytest_infer.reporting.terminal",
        ]
    ]


def unexplained_lazy_imports(source: str) -> list[int]:
    """Lines of imports inside functions with no comment on them or above their group (the reason they are lazy)."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    above = sub.lineno - 2
                    while above >= 0 and re.match(r"\s*(from \S+ )?import ", lines[above]):
                        above -= 1
                    said = "#" in lines[sub.end_lineno - 1] or (
                        above >= 0 and lines[above].strip().startswith("#")
                    )
                    if not said:
                        found.append(sub.lineno)
    return sorted(set(found))


# scripts an engine's interpreter runs, whose functions import what only it has (torch, transformers, gguf); each
# script's source is its model's cache key, so a comment added there would rebuild the model everywhere
ENGINE_SCRIPTS = ("tiny_build.py", "tiny_gguf_build.py", "gemma_build.py")


def test_every_import_inside_a_function_says_why_it_is_lazy():
    """An import inside a function is there for start-up cost (or an optional extra) and says so; any other import
    belongs at the module's top, where the import contracts see it."""
    bare = "def f():\n    import json\n\n    return json\n"
    assert unexplained_lazy_imports(bare) == [2]
    assert (
        unexplained_lazy_imports(
            bare.replace("    import json", "    # lazy: why\n    import json")
        )
        == []
    )
    unexplained = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "pytest_infer").rglob("*.py"))
        if (lines := unexplained_lazy_imports(path.read_text())) and path.name not in ENGINE_SCRIPTS
    }
    assert unexplained == {}


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the test extra has it)")
    return found


@pytest.mark.parametrize(
    "command",
    [("check", "--no-cache"), ("format", "--check", "--no-cache")],
    ids=["lint", "format"],
)
def test_the_linter_and_formatter_pass_on_the_package_its_suites_and_tests(
    command: tuple[str, ...],
):
    """Lines of at most 120 characters (E501) in the formatter's layout: the formatter is the one arbiter of style."""
    run = subprocess.run(
        [
            tool("ruff"),
            *command,
            "pytest_infer",
            "suites",
            "tests",
            "benchmarks",
            "scripts",
            "conftest.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_type_checker_passes_on_the_package_and_catches_a_wrong_type(tmp_path: Path):
    """One mypy run (the slowest tool here) on a copy of the package where a results field gets the wrong type: the
    injected error is the only one, so the package itself type-checks and the configuration catches a wrong type.

    Its cache lives in the user's cache, not the clone: mypy re-reads a module whose hash changed, so a
    clean clone's copy is checked from the cache: `pytest tests/core/test_architecture.py -k type_checker
    --durations=1` took 22 s with a cold cache and 1.2 s with a warm one here (2026-12-08)."""
    copy_with(
        tmp_path,
        "results/views.py",
        "\n\ndef _broken(results: SessionResults) -> int:\n    return results.targets\n",
    )
    run = subprocess.run(
        [tool("mypy"), "--cache-dir", str(cache_dir() / "mypy")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert (
        len(errors) == 1
        and 'Incompatible return value type (got "dict[str, TargetRecord]", expected "int")'
        in errors[0]
    ), run.stdout[-4000:]
    assert "Found 1 error in 1 file" in run.stdout
