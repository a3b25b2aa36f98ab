"""The built-in models as one value: ``models/registry.py`` lists them, ``resolve_targets``
resolves the model string once and every target carries its ``Builtin``; nothing else in the
package tests the model string against a built-in name, and a third model is one module listed in
the registry."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path
from types import MappingProxyType

import pytest

from pytest_infer.adapters import registry as adapters
from pytest_infer.adapters.base import BaseAdapter, Builtin, Environment, LaunchRequest, LaunchSpec
from pytest_infer.adapters.parsers import Parsers
from pytest_infer.models import registry
from pytest_infer.models.gemma import GEMMA
from pytest_infer.models.tiny import TINY
from pytest_infer.options import InferOptions
from pytest_infer.paths import CACHE_TAGS, DEFAULT_MODEL, builtin_model_of, model_cache
from pytest_infer.server.pool import ServerInfo, ServerPool
from pytest_infer.targets import resolve_targets
from pytest_infer.testing.fakeserver import Deviation, FakeServer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_infer"
REGISTRY = PACKAGE / "models" / "registry.py"
ENGINE = Environment(label="engine", python="/engines/vllm/bin/python")
# (file, name): a constant holding a built-in model's name, compared where it means no such model
ALLOWED = {
    ("pytest_infer/results/views.py", "DEFAULT_MODEL"): "a report column omits the default model",
}


def _module(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _imported(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ``from X import`` in ``module`` reads from, resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _bound(tree: ast.Module, names: set[str]) -> set[str]:
    """The module-level names ``tree`` binds to a built-in model's name or to a ``Builtin``."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            called = value.func if isinstance(value, ast.Call) else None
            holds = (isinstance(value, ast.Constant) and value.value in names) or (
                isinstance(called, ast.Name) and called.id == "Builtin"
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if holds and isinstance(t, ast.Name)}
    return found


def _reach(tree: ast.Module, module: str, is_package: bool, constants: dict[str, set[str]]):
    """The names in ``module`` that hold a built-in model (its own constants, and those it
    imports), and the modules it imports by local name."""
    local, modules = set(constants[module]), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _imported(node, module, is_package)
            for alias in node.names:
                if alias.name in constants.get(source, ()):
                    local.add(alias.asname or alias.name)
                elif f"{source}.{alias.name}" in constants:
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name: alias.name for alias in node.names}
    return local, modules


@dataclasses.dataclass
class _Naming:
    """Which built-in model, if any, an expression names: a literal, or a constant bound to one."""

    names: set[str]
    local: set[str]
    held: dict[str, set[str]]  # an imported module's local name -> its constants

    def __call__(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and node.value in self.names:
            return repr(node.value)
        if isinstance(node, ast.Name) and node.id in self.local:
            return node.id
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return node.attr if node.attr in self.held.get(node.value.id, ()) else None
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return next((n for n in map(self, node.elts) if n), None)
        return None


def _tested(node: ast.AST, named: _Naming) -> list[str | None]:
    """The built-in models ``node`` tests a value against."""
    if isinstance(node, ast.Compare):
        return [named(n) for n in (node.left, *node.comparators)]
    if isinstance(node, ast.Dict):
        return [named(k) for k in node.keys if k is not None]
    if isinstance(node, ast.MatchValue):
        return [named(node.value)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        prefix = node.func.attr in ("startswith", "endswith", "removeprefix", "removesuffix")
        return [named(a) for a in node.args] if prefix else []
    return []


def model_name_tests(root: Path, names: set[str]) -> list[str]:
    """``FILE:LINE: code`` of each test of a value against a built-in model's name in the package
    under ``root`` outside the registry: a comparison, a membership, a dict key, a match case or a
    prefix test with a name's literal, or with a constant bound to one (or to a ``Builtin``),
    imported or not."""
    trees = {path: ast.parse(path.read_text()) for path in sorted(root.rglob("*.py"))}
    constants = {_module(path, root.parent): _bound(tree, names) for path, tree in trees.items()}
    found = []
    for path, tree in trees.items():
        if path.relative_to(root) == REGISTRY.relative_to(PACKAGE):
            continue
        relative, module = path.relative_to(root.parent).as_posix(), _module(path, root.parent)
        local, modules = _reach(tree, module, path.name == "__init__.py", constants)
        held = {alias: constants.get(source, set()) for alias, source in modules.items()}
        named = _Naming(names, local, held)
        found += [
            f"{relative}:{node.lineno}: {ast.unparse(node)}"
            for node in ast.walk(tree)
            for name in _tested(node, named)
            if name and (relative, name) not in ALLOWED
        ]
    return found


def test_no_module_but_the_registry_tests_a_model_string_against_a_builtin_name():
    found = "\n".join(model_name_tests(PACKAGE, {builtin.name for builtin in registry.BUILTINS}))
    assert not found, f"ask the target's (or server's) Builtin (models/registry.py):\n{found}"


def test_the_scan_sees_every_spelling(tmp_path: Path):
    package = tmp_path / "pytest_infer"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "paths.py").write_text('DEFAULT = "tiny"\n')
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "toy.py").write_text("TOY = Builtin(name='toy')\nNAME = 'toy'\n")
    (package / "models" / "registry.py").write_text("def builtin(m):\n    return m == 'toy'\n")
    (package / "probe.py").write_text(
        "from . import paths\n"
        "from .models import toy\n"
        "from .models.toy import NAME as N, TOY\n"
        "from .paths import DEFAULT\n"
        "a = model == 'tiny'\n"
        "b = model in ('gemma-3-270m', 'x')\n"
        "c = {DEFAULT: 1}\n"
        "d = paths.DEFAULT != model\n"
        "e = target.builtin is TOY\n"
        "f = model.startswith(N)\n"
        "g = model == toy.NAME\n"
        "match model:\n"
        "    case 'toy':\n"
        "        pass\n"
        "h = model == 'org/other' or name == 'tinyish'\n"
    )
    found = model_name_tests(package, {"tiny", "gemma-3-270m", "toy"})
    lines = [int(line.split(":")[1]) for line in found]
    assert lines == [5, 6, 7, 8, 9, 10, 11, 13], found


def test_every_builtin_model_module_is_listed_once_in_the_registry():
    """A model defined in a module and left out of ``BUILTINS`` would resolve from no string."""
    defined = [
        getattr(importlib.import_module(f"pytest_infer.models.{path.stem}"), name)
        for path in sorted((PACKAGE / "models").glob("*.py"))
        for name in sorted(_bound(ast.parse(path.read_text()), set()))
    ]
    assert sorted(b.name for b in defined) == sorted(b.name for b in registry.BUILTINS)
    assert all(any(b is listed for listed in registry.BUILTINS) for b in defined)


@pytest.mark.parametrize("builtin", registry.BUILTINS, ids=lambda b: b.name)
def test_a_builtin_is_resolved_by_its_name_and_by_each_of_its_cache_entries(builtin: Builtin):
    assert registry.builtin(builtin.name) is builtin
    for tag in (None, *CACHE_TAGS):
        cached = model_cache(builtin.name, tag, "0123456789ab")
        assert builtin_model_of(str(cached)) == builtin.name
        assert registry.builtin(f"{cached}/") is builtin
    assert registry.builtin(f"org/{builtin.name}") is None
    assert registry.builtin(f"{builtin.name}-instruct") is None
    assert registry.builtin(f"/data/{builtin.name}-0123456789ab") is None  # not in the cache


@pytest.mark.parametrize("builtin", registry.BUILTINS, ids=lambda b: b.name)
def test_a_builtins_facts_name_known_frameworks_and_forms(builtin: Builtin):
    assert set(builtin.parsers) <= set(adapters.names()) and "folder" in builtin.files
    assert builtin.known_context == (builtin.own_context or builtin.context)
    with pytest.raises(ValueError, match=f"{builtin.name} has no safetensors form"):
        builtin.path("safetensors", ENGINE)  # type: ignore[arg-type]


def test_the_default_model_is_the_scripted_tiny_one():
    assert registry.builtin(DEFAULT_MODEL) is TINY and TINY.scripted and not GEMMA.scripted
    assert GEMMA.without_tools and TINY.without_tools is None


@pytest.mark.parametrize("model", [TINY.name, GEMMA.name, "org/model-7b"])
def test_every_target_carries_the_builtin_its_model_names(model: str):
    launched = InferOptions(frameworks=("vllm", "llamacpp"), model=model, environments={
        "vllm": (ENGINE,), "llamacpp": (ENGINE,)})  # fmt: skip
    urls = (("a", "http://127.0.0.1:1"), ("b", "http://127.0.0.1:2"))
    endpoints = InferOptions(endpoints=urls, model=model)
    targets = resolve_targets(launched) + resolve_targets(endpoints)
    assert [t.builtin for t in targets] == [registry.builtin(model)] * 4


def test_a_server_hands_its_builtin_to_an_xdist_worker_by_name():
    vllm = adapters.get("vllm")
    info = ServerInfo(target="t", adapter=vllm, model="/m/tiny", base_url="", builtin=TINY)
    assert info.to_dict()["builtin"] == TINY.name
    assert ServerInfo.from_dict(info.to_dict()).builtin is TINY
    other = ServerInfo(target="t", adapter=vllm, model="m", base_url="")
    assert ServerInfo.from_dict(other.to_dict()).builtin is None


SERVED = [("/cache/models/tiny-0123456789ab", TINY), ("meta/llama", None), ("tiny", TINY)]


@pytest.mark.parametrize(("served", "builtin"), SERVED)
def test_an_endpoints_builtin_is_the_one_it_serves(tmp_path: Path, served: str, builtin):
    """An endpoint that does not serve ``--infer-model`` (tiny by default) is judged as the model
    it lists: a real model's context is never taken for tiny's own."""
    listed = {"data": [{"id": served}]}
    listing = Deviation(request=lambda path, body: (200, listed) if path == "/v1/models" else None)
    with FakeServer(listing) as server:
        options = InferOptions(endpoints=(("e", server.base_url),), report_dir=tmp_path)
        pool = ServerPool(options, resolve_targets(options))
        try:
            info = pool.get("e")
        finally:
            pool.stop_all()
    assert info.model == served and info.builtin is builtin


class Recorded(Exception):
    """Raised by the recording adapter once the pool has built its launch request."""


class Recording(BaseAdapter):
    name = "vllm"  # a toy model's parsers are keyed by the framework's name
    title = "Recording"

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        raise Recorded(request)


def test_a_third_builtin_model_is_one_module_listed_in_the_registry(tmp_path, monkeypatch):
    """What a new built-in model needs of the rest of the package: nothing. A toy one, listed, is
    resolved, carried, made in its engine's form and launched on its own facts."""
    folder = tmp_path / "toy-folder"
    toy = Builtin(
        name="toy-embedder",
        files=MappingProxyType({"folder": lambda environment: folder}),
        dtype="float16",
        context=512,
        parsers=MappingProxyType({"vllm": Parsers(tool="hermes")}),
    )
    monkeypatch.setattr(registry, "BUILTINS", (*registry.BUILTINS, toy))
    monkeypatch.setattr(registry, "_BY_NAME", {b.name: b for b in registry.BUILTINS})
    options = InferOptions(frameworks=("vllm",), model=toy.name, environments={"vllm": (ENGINE,)})
    [target] = resolve_targets(options)
    assert target.builtin is toy and target.parsers == Parsers(tool="hermes")
    target = dataclasses.replace(target, adapter=Recording())
    pool = ServerPool(dataclasses.replace(options, report_dir=tmp_path / "report"), [target])
    with pytest.raises(Recorded) as recorded:
        pool.get(target.id)
    request = recorded.value.args[0]
    assert request.model == str(folder) and request.builtin is toy
    argv = adapters.get("vllm").launch(request).argv
    launched = {"--max-model-len": "512", "--dtype": "float16", "--tool-call-parser": "hermes"}
    assert {flag: argv[argv.index(flag) + 1] for flag in launched} == launched
    assert "--reasoning-parser" not in argv
