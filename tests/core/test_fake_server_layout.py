"""The fake server stays easy to extend: no function in it reaches 60 lines, and every way it can
be wrong is a named, documented factory in its one table (``DEVIATIONS``)."""

from __future__ import annotations

import ast
import inspect
from functools import partial
from pathlib import Path
from textwrap import indent

import pytest

from pytest_infer.testing import fakeserver
from pytest_infer.testing.fakeserver import DEVIATIONS, FAULTS, Deviation, faults, registered

PACKAGE = Path(fakeserver.__file__).parent
MAX_LINES = 60


def long_functions(folder: Path) -> list[str]:
    """Every function of ``MAX_LINES`` lines or more (methods and nested ones included), from its
    ``def`` line to its last."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines >= MAX_LINES:
                    found.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_of_the_fake_server_reaches_60_lines():
    assert len(list(PACKAGE.glob("*.py"))) > 5, f"the fake server's modules are not in {PACKAGE}"
    assert long_functions(PACKAGE) == [], "split it: the fake server is where checks are proven"


def _function(name: str, lines: int) -> str:
    return f"def {name}():\n" + "".join(f"    x = {i}\n" for i in range(lines - 1))


def test_the_scan_finds_a_method_of_60_lines_and_passes_one_of_59(tmp_path: Path):
    long = indent(_function("long", MAX_LINES), "    ")
    (tmp_path / "m.py").write_text(_function("short", MAX_LINES - 1) + f"\n\nclass C:\n{long}")
    assert long_functions(tmp_path) == [f"m.py:{MAX_LINES + 3} long ({MAX_LINES} lines)"]


def _returns_a_deviation(function: object) -> bool:
    return inspect.isfunction(function) and function.__annotations__.get("return") == "Deviation"


@pytest.mark.parametrize("name", sorted(DEVIATIONS))
def test_each_deviation_is_documented_and_exported_under_its_name(name: str):
    factory = DEVIATIONS[name]
    assert (factory.__doc__ or "").strip(), f"{name}: say in a docstring what server it makes"
    assert factory.__name__ == name.replace("-", "_"), "one name, in the table and in the code"
    assert getattr(fakeserver, factory.__name__) is factory, "export it from the package"
    assert _returns_a_deviation(factory)


def test_no_deviation_factory_is_left_out_of_the_table():
    """A public factory of a Deviation outside ``DEVIATIONS`` is one no test or reader finds."""
    public = [v for k, v in vars(faults).items() if _returns_a_deviation(v) and k[0] != "_"]
    assert len(public) > 10, "the scan finds no factory"
    assert [f.__name__ for f in public if f not in DEVIATIONS.values()] == []


def test_each_fault_is_a_registered_deviation_that_takes_no_argument():
    for name, factory in FAULTS.items():
        if name == "none":
            assert factory is Deviation
            continue
        known = factory.func if isinstance(factory, partial) else factory
        assert known in DEVIATIONS.values(), f"--fault {name} is not in DEVIATIONS"
        assert isinstance(factory(), Deviation), name


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        registered("wrong-model")(lambda: Deviation())
    assert DEVIATIONS["wrong-model"] is fakeserver.wrong_model
