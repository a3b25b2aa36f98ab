"""A plain ``pip install pytest-infer`` (no extras) tests a server: the plots, the repeated runs' statistics and the
Messages SDK check are extras, and where one is missing the part that needs it says which extra to install, while
the rest of the session runs. pytest-asyncio is no dependency: nothing in the plugin or its tests is async-marked."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_infer.outcomes import MissingExtra
from pytest_infer.reporting.html import render_html
from pytest_infer.reporting.plots import figure
from pytest_infer.results.model import SessionResults
from pytest_infer.slo.metrics.stats import confidence_interval
from pytest_infer.slo.significance import mann_whitney_greater
from pytest_infer.testing.fakeserver import FakeServer

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXTRAS = {"plots": "matplotlib", "stats": "scipy", "anthropic": "anthropic"}
# the interpreter of a plain install: the extras' top-level packages (and pytest-asyncio) cannot be imported
PLAIN = """
import sys
from importlib.abc import MetaPathFinder

HIDDEN = {"matplotlib", "scipy", "anthropic", "pytest_asyncio"}

class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
import pytest
code = pytest.main(sys.argv[1:])
print("LOADED", sorted({m.partition(".")[0] for m in sys.modules} & HIDDEN))
sys.exit(code)
"""


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def conformance(interpreter: list[str], out: Path, select: str) -> subprocess.CompletedProcess[str]:
    """The bundled conformance suite's ``select``ed checks on a spec-correct server, reports in ``out``."""
    with FakeServer() as server:
        options = [
            f"--infer-endpoint={server.base_url}",
            "--infer-framework=vllm",
            f"--infer-report-dir={out}",
        ]
        return subprocess.run(
            [sys.executable, *interpreter, str(ROOT / "suites" / "conformance"), *options, "-q", "-k", select or "",
             "-p", "no:cacheprovider", "-p", "no:randomly", f"--rootdir={out}"],
            capture_output=True, text=True, timeout=300, cwd=out,
        )  # fmt: skip


def test_the_plain_install_needs_no_extra_and_no_pytest_asyncio():
    names = {dep.split(">")[0].split("[")[0].strip() for dep in project()["dependencies"]}
    assert names.isdisjoint({"pytest-asyncio", *EXTRAS.values()}), sorted(names)
    extras = project()["optional-dependencies"]
    for extra, package in EXTRAS.items():
        assert any(dep.startswith(package) for dep in extras[extra]) and any(
            d.startswith(package) for d in extras["all"]
        )
    assert not [
        p for p in (ROOT / "pytest_infer").rglob("*.py") if "pytest_asyncio" in p.read_text()
    ]


def test_without_the_extras_the_conformance_suite_runs_and_the_messages_sdk_check_names_its_extra(
    tmp_path,
):
    """The whole conformance suite on a spec-correct server in an interpreter where no extra is importable: nothing
    fails, the checks pass as with the extras, the Messages SDK check is not exercised and names the ``anthropic``
    extra, the reports are written, and none of the hidden packages was loaded."""
    run = conformance(["-c", PLAIN], tmp_path, "")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "LOADED []" in run.stdout and (tmp_path / "report.html").is_file()
    tests = json.loads((tmp_path / "results.json").read_text())["tests"]
    outcomes = {t["check"]: t["outcome"] for t in tests}
    assert not {c for c, o in outcomes.items() if o in ("failed", "error")}
    assert sum(o == "passed" for o in outcomes.values()) > 50
    (anthropic,) = [t for t in tests if t["check"] == "sdk.anthropic"]
    assert anthropic["outcome"] == "not_exercised"
    assert "pip install 'pytest-infer[anthropic]'" in anthropic["message"]


def test_the_same_run_with_the_extras_exercises_the_messages_check(tmp_path):
    """The positive control of the test above: with anthropic importable the same check passes on the same server."""
    pytest.importorskip("anthropic")
    run = conformance(["-m", "pytest"], tmp_path, "sdk.anthropic")
    assert run.returncode == 0, run.stdout[-3000:]
    (test,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["check"] == "sdk.anthropic" and test["outcome"] == "passed"


def test_a_report_without_the_plots_extra_is_written_and_says_which_extra_draws_its_plots(
    monkeypatch,
):
    results = SessionResults.read(
        DATA / "gpu-smoke" / "results.json"
    )  # structured and SLO figures to draw
    assert "<svg" in render_html(results)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    page = render_html(results)
    assert (
        "<svg" not in page
        and "Plots skipped" in page
        and "pip install &#x27;pytest-infer[plots]&#x27;" in page
    )


@pytest.mark.parametrize(
    ("module", "use", "extra"),
    [
        ("scipy.stats", lambda: confidence_interval([1.0, 2.0]), "stats"),
        ("scipy.stats", lambda: mann_whitney_greater([1.0], [2.0]), "stats"),
        ("matplotlib.figure", figure, "plots"),
    ],
)
def test_a_missing_extra_is_an_error_that_names_it(monkeypatch, module, use, extra):
    monkeypatch.setitem(
        sys.modules, module, None
    )  # what an interpreter without the package raises on import
    with pytest.raises(MissingExtra, match=rf"pip install 'pytest-infer\[{extra}\]'"):
        use()
