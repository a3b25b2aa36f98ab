"""A framework added from another package: its adapter, declared in the ``pytest_infer.adapters``
entry-point group, is found, launched and reported like a built-in; a broken one names itself."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from fnmatch import fnmatch
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from pytest_infer.adapters.registry import GROUP, AdapterLoadError, Registry
from pytest_infer.adapters.vllm import VLLMAdapter
from pytest_infer.slo.profiles import LoadPoint
from pytest_infer.structured.runner import paths_for

TOY_ADAPTER = """
import sys

from pytest_infer.adapters.base import BaseAdapter, LaunchSpec, FrameworkVersion


class ToyAdapter(BaseAdapter):
    name = "toy"
    title = "Toy"
    accepts_ignore_eos = True

    def launch(self, request):
        argv = [
            sys.executable, "-m", "pytest_infer.testing.fakeserver", "--host", request.host, "--port", str(request.port)
        ]
        return LaunchSpec(argv=argv, notes=("launched by ToyAdapter",))

    def detect_version(self, environment):
        return FrameworkVersion("0.1", distribution="toy-adapter", source="ToyAdapter")


class Nameless:
    title = "no name, no launch"


class Renamed(ToyAdapter):
    name = "other"


class Broken(ToyAdapter):
    def __init__(self):
        raise RuntimeError("the toy adapter cannot start today")
"""

CHAT_TEST = """
def test_chat(infer_client, infer_server):
    assert infer_server.framework == "toy"
    resp = infer_client.chat("hello", max_tokens=4, temperature=0)
    assert resp.status_code == 200, resp.text
"""


def install_toy(root: Path, value: str = "toy_adapter:ToyAdapter") -> Path:
    """A package installed the way pip leaves it: the module plus a dist-info folder declaring the entry point."""
    root.mkdir(exist_ok=True)
    (root / "toy_adapter.py").write_text(TOY_ADAPTER)
    dist = root / "toy_adapter-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-adapter\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{GROUP}]\ntoy = {value}\n")
    return root


def test_an_installed_entry_point_launches_its_framework(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(install_toy(tmp_path / "site")))
    pytester.makepyfile(test_toy=CHAT_TEST)
    report = pytester.path / "report"
    result = pytester.runpytest_subprocess(
        "--infer-framework=toy",
        "--infer-model=toy-model",
        f"--infer-report-dir={report}",
        "-p",
        "no:cacheprovider",
        "-v",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_chat*[[]toy[]] PASSED*", "*launched by ToyAdapter*"])
    results = json.loads((report / "results.json").read_text())
    target = results["targets"]["toy"]
    assert (target["framework"], target["version"], target["version_source"]) == (
        "toy",
        "0.1",
        "ToyAdapter",
    )
    assert [(t["target"], t["outcome"]) for t in results["tests"]] == [("toy", "passed")]
    assert "pytest_infer.testing.fakeserver" in (report / "servers" / "toy.log").read_text()


def test_an_unknown_framework_lists_the_entry_point_ones(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(install_toy(tmp_path / "site")))
    pytester.makepyfile(test_toy=CHAT_TEST)
    result = pytester.runpytest_subprocess("--infer-framework=nosuch", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: *unknown framework 'nosuch'*valid: vllm, *, transformers, llamacpp, toy*"]
    )


def test_a_broken_entry_point_is_a_usage_error_only_when_asked_for(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(install_toy(tmp_path / "site", "toy_adapter:Broken")))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess(
        "--infer-framework=toy", "--infer-model=toy-model", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: entry point 'toy = toy_adapter:Broken' (pytest_infer.adapters from toy-adapter 0.1) failed to load:"
            " RuntimeError: the toy adapter cannot start today"
        ]
    )
    assert "Traceback" not in result.stderr.str()


@pytest.fixture
def toy_module(tmp_path: Path, monkeypatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(install_toy(tmp_path / "site")))
    yield
    sys.modules.pop("toy_adapter", None)


def toy_registry(value: str, name: str = "toy") -> Registry:
    return Registry([VLLMAdapter()], [EntryPoint(name, value, GROUP)])


def test_entry_points_are_listed_without_importing_them() -> None:
    adapters = toy_registry("no_such_module:Adapter")
    assert list(adapters) == ["vllm", "toy"] and "toy" in adapters
    with pytest.raises(KeyError, match="unknown framework 'nosuch'; valid: vllm, toy"):
        adapters["nosuch"]


@pytest.mark.usefixtures("toy_module")
def test_a_class_entry_point_is_instantiated_once() -> None:
    adapters = toy_registry("toy_adapter:ToyAdapter")
    assert type(adapters["toy"]).__name__ == "ToyAdapter"
    assert adapters["toy"] is adapters["toy"]


@pytest.mark.usefixtures("toy_module")
@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "toy",
            "no_such_module:ToyAdapter",
            "*'toy = no_such_module:ToyAdapter'*failed to load: ModuleNotFoundError: No module named 'no_such_module'",
        ),
        (
            "toy",
            "toy_adapter:Broken",
            "*'toy = toy_adapter:Broken'*failed to load: RuntimeError: the toy adapter cannot start today",
        ),
        (
            "toy",
            "toy_adapter:Nameless",
            (
                "*'toy = toy_adapter:Nameless'*is no Adapter: it lacks name, module, *, launch, detect_version,"
                " structured_output_body*BaseAdapter*"
            ),
        ),
        (
            "toy",
            "toy_adapter:Renamed",
            "*'toy = toy_adapter:Renamed'*loads an adapter named 'other'; the two names must match",
        ),
        (
            "vllm",
            "toy_adapter:ToyAdapter",
            "framework 'vllm' is claimed twice: the built-in adapter, entry point 'vllm = toy_adapter:ToyAdapter'*",
        ),
    ],
)
def test_a_broken_entry_point_names_itself(name: str, value: str, message: str) -> None:
    with pytest.raises(AdapterLoadError) as info:
        toy_registry(value, name)[name]
    assert isinstance(info.value, pytest.UsageError), (
        "pytest ends with the message, not an internal-error traceback"
    )
    assert fnmatch(str(info.value), message), str(info.value)


@pytest.mark.usefixtures("toy_module")
def test_what_the_plugin_asks_an_adapter_it_asks_an_entry_point_one_alike() -> None:
    toy = toy_registry("toy_adapter:ToyAdapter")["toy"]
    workload = LoadPoint("p", {}, {}).workload(toy)
    assert (workload.ignore_eos, workload.extra_body) == (True, {})
    assert [p.name for p in paths_for(toy)] == [
        "response_format",
        "response_format-stream",
    ]  # no field of its own
