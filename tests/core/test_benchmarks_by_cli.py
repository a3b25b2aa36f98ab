"""Tests reach benchmarks/ through its command lines, never by loading a script by path.

A benchmark is an instrument a user runs; a test that imports its functions proves those, not the
command the docs tell users to type. A test file that names benchmarks/ and loads code by path
(``importlib``'s ``spec_from_file_location``, ``runpy.run_path``, ``SourceFileLoader``, or a
``sys.path`` entry) is named here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOADERS = {"spec_from_file_location", "run_path", "SourceFileLoader"}
# The real-model results folder keeps the script that derives its SLO limits beside its data; this
# test loads it by path. It is no instrument, so not yet run as a command.
RESULTS_SCRIPTS = {"tests/slo/test_profile_model.py"}


def loads_benchmarks_by_path(source: str) -> bool:
    tree = ast.parse(source)
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)]
    names_benchmarks = any(isinstance(s, str) and "benchmarks" in s for s in strings)
    return names_benchmarks and any(loads_by_path(node) for node in ast.walk(tree))


def loads_by_path(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    called = node.func
    name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
    on_sys_path = (
        isinstance(called, ast.Attribute)
        and called.attr in ("insert", "append")
        and ast.unparse(called.value) == "sys.path"
    )
    return name in LOADERS or on_sys_path


def test_no_test_loads_a_benchmark_script_by_path():
    offending = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if loads_benchmarks_by_path(path.read_text())
    }
    assert offending - RESULTS_SCRIPTS == set(), "run the benchmark as a command (subprocess)"
    assert RESULTS_SCRIPTS <= offending, "no longer loaded by path: drop it from RESULTS_SCRIPTS"


def test_each_way_of_loading_by_path_is_seen():
    header = 'from pathlib import Path\nSCRIPT = Path("benchmarks") / "soak.py"\n'
    for loading in (
        "importlib.util.spec_from_file_location('soak', SCRIPT)",
        "runpy.run_path(str(SCRIPT))",
        "SourceFileLoader('soak', str(SCRIPT)).load_module()",
        "sys.path.insert(0, str(SCRIPT.parent))",
        "sys.path.append('benchmarks')",
    ):
        assert loads_benchmarks_by_path(header + loading), loading
    ran = "subprocess.run([sys.executable, str(SCRIPT), '--help'])"
    assert not loads_benchmarks_by_path(header + ran)
    elsewhere = "importlib.util.spec_from_file_location('x', 'scripts/x.py')"
    assert not loads_benchmarks_by_path(elsewhere)
