"""A suite is one folder and one registration: a toy suite from a test directory reaches the matrix,
the results file, every report and the gate without a line of the core naming it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # loaded once here: in-process pytester runs cannot re-import numpy

from pytest_infer import SessionResults, Suite, Table
from pytest_infer.cli import main as cli
from pytest_infer.options import BASELINE, ENDPOINT, REPORT_DIR
from pytest_infer.results.model import combine
from pytest_infer.suite import SuiteError, by_name, installed
from pytest_infer.table import RawTable
from pytest_infer.testing.fakeserver import Deviation, FakeServer

# The toy suite counts the words of the answer: a drop in words is its regression. It uses the generic channel for
# its settings: a gate setting of its own (how many words may go) from its pytest option or its part of the
# pytest-infer command, and a variant of its own (a dialect) that makes a target another target.
TOY_SUITE = """
from pytest_infer import Cell, Finding, Section, Suite, SuiteCli, Table


class WordTable(Table):
    def __init__(self, words=None):
        self.words = words if words is not None else {}

    def to_json(self):
        return self.words

    @classmethod
    def from_json(cls, data):
        return cls(dict(data))

    def merge(self, other):
        for target, n in other.to_json().items():
            self.words[target] = self.words.get(target, 0) + n

    def rekey(self, old, new):
        if old in self.words:
            self.words[new] = self.words.pop(old)

    def sections(self):
        cells = {t: Cell(str(n), "passed" if n else "failed") for t, n in self.words.items()}
        return [Section("Toy: words answered", "toy probe", {"toy.words": cells})]

    def compare(self, baseline, pairing):
        tolerated = pairing.settings.get("toy") or 0
        before, after = baseline.to_json().get(pairing.baseline), self.words.get(pairing.candidate)
        if before is None or after is None or after >= before - tolerated:
            return []
        return [Finding("regression", "toy", pairing.label, "toy.words", before, after, "fewer words")]

    @classmethod
    def gate_rules(cls, settings):
        return [f"toy.words may drop by {settings}"] if settings else []


class ToyCli(SuiteCli):
    def add_arguments(self, parser, command):
        if command == "compare":
            parser.add_argument("--toy-tolerance", type=int, default=0)

    def settings(self, args):
        return getattr(args, "toy_tolerance", 0)

    def folders(self):
        return ("toy",)


TOY = Suite("toy", "the toy suite (counts words)", table=WordTable, cli="toy_suite:CLI")
CLI = ToyCli()
"""

TOY_CONFTEST = """
import pytest
from toy_suite import TOY

from pytest_infer.session import session_key


def pytest_infer_suites():
    return [TOY]


def pytest_addoption(parser):
    parser.addoption("--toy-tolerance", type=int, default=0, help="words an answer may lose before the gate fails")
    parser.addoption("--toy-dialect", help="the toy setup's dialect: another dialect is another target")


def pytest_configure(config):
    session = config.stash[session_key]
    session.settings["toy"] = config.getoption("--toy-tolerance")
    if config.getoption("--toy-dialect"):
        session.variant["toy dialect"] = config.getoption("--toy-dialect")


@pytest.fixture
def toy_table(infer_session):
    return infer_session.results.table("toy")
"""

TOY_TEST = """
import pytest

pytestmark = pytest.mark.toy


def test_words(infer_client, infer_target, toy_table):
    answer = infer_client.chat("hi", max_tokens=8, temperature=0).json()["choices"][0]["message"]["content"]
    toy_table.words[infer_target.id] = toy_table.words.get(infer_target.id, 0) + len(answer.split())
"""


def fewer_words() -> Deviation:
    def response(path, body, response):
        for choice in response.get("choices", []):
            choice["message"]["content"] = "one"
        return response

    return Deviation(response=response)


@pytest.fixture
def toy(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(toy_suite=TOY_SUITE, test_toy=TOY_TEST)
    pytester.makeconftest(TOY_CONFTEST)
    return pytester


@pytest.fixture
def toy_installed(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Suite:
    """The toy suite as if a package registered it (an entry point): what ``pytest-infer`` and results files see."""
    monkeypatch.syspath_prepend(toy.path)
    suite = importlib.import_module("toy_suite").TOY
    suites = (*installed(), suite)
    monkeypatch.setattr("pytest_infer.cli.installed", lambda: suites)
    monkeypatch.setattr("pytest_infer.results.model.installed", lambda: suites)
    return suite


def run(pytester: pytest.Pytester, server: FakeServer, name: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        f"{ENDPOINT}={server.base_url}",
        f"{REPORT_DIR}={name}",
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        *args,
    )


def test_a_toy_suite_reaches_the_matrix_the_results_every_report_and_the_gate(toy: pytest.Pytester):
    with FakeServer() as server:
        base = run(toy, server, "base")
        base.assert_outcomes(passed=1)
        server.set_deviation(fewer_words())
        cand = run(toy, server, "cand", f"{BASELINE}=base/results.json")
    saved = json.loads((toy.path / "base" / "results.json").read_text())
    (words,) = saved["toy"].values()
    assert words > 1, saved["toy"]
    assert [t["suite"] for t in saved["tests"]] == [
        "toy"
    ]  # the test is recorded under the suite its marker names
    base.stdout.fnmatch_lines(["*= pytest-infer =*", "toy probe*", f"toy.words*{words}"])
    markdown = (toy.path / "base" / "summary.md").read_text()
    assert "### Toy: words answered" in markdown and f"| toy.words | {words} |" in markdown
    html = (toy.path / "base" / "report.html").read_text()
    assert (
        'id="toy"' in html
        and "toy.words" in html
        and f'<td class="passed" title="">{words}</td>' in html
    )
    assert (
        cand.ret == pytest.ExitCode.TESTS_FAILED
    )  # only the toy suite's gate finding fails this run
    cand.assert_outcomes(passed=1)
    cand.stdout.fnmatch_lines(
        ["upgrade gate: FAIL: 1 regression", f"  [[]toy] toy.words: {words} -> 1 (*); fewer words"]
    )
    gate = json.loads((toy.path / "cand" / "results.json").read_text())["gate"]
    assert [f["area"] for f in gate["findings"] if f["kind"] == "regression"] == ["toy"]


def test_a_toy_setting_reaches_its_table_through_the_pairing(toy: pytest.Pytester):
    """The toy suite's option becomes its gate setting (``InferSession.settings``), which its ``compare`` reads from
    ``Pairing.settings`` and its ``gate_rules`` describes: the same drop in words passes when tolerated."""
    with FakeServer() as server:
        run(toy, server, "base").assert_outcomes(passed=1)
        server.set_deviation(fewer_words())
        strict = run(toy, server, "strict", f"{BASELINE}=base/results.json")
        tolerant = run(
            toy, server, "tolerant", f"{BASELINE}=base/results.json", "--toy-tolerance=1000"
        )
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    assert tolerant.ret == pytest.ExitCode.OK
    tolerant.stdout.fnmatch_lines(
        ["upgrade gate: PASS: no regressions", "compared: *; rules: toy.words may drop by 1000"]
    )


def test_a_toy_variant_splits_a_target_and_the_same_variant_folds(
    toy: pytest.Pytester, toy_installed: Suite
):
    """The toy suite's variant reaches the target (``TargetRecord.variant``), every report's targets table, and the
    identity by which ``combine`` folds result files: one dialect twice is one column, another is another."""
    with FakeServer() as server:
        for name, dialect in (("terse", "terse"), ("terse-again", "terse"), ("verbose", "verbose")):
            run(toy, server, name, f"--toy-dialect={dialect}").assert_outcomes(passed=1)
    terse = SessionResults.read(toy.path / "terse" / "results.json")
    (target,) = terse.targets.values()
    assert target.variant == {"toy dialect": "terse"}
    assert (
        "| target | framework | version | model | toy dialect | state | tests |"
        in (toy.path / "terse" / "summary.md").read_text()
    )
    parts = [
        (name, SessionResults.read(toy.path / name / "results.json"))
        for name in ("terse", "terse-again", "verbose")
    ]
    words = {name: sum(part.tables["toy"].to_json().values()) for name, part in parts}
    merged = combine(parts)
    assert sorted(t.variant["toy dialect"] for t in merged.targets.values()) == ["terse", "verbose"]
    by_dialect = {t.variant["toy dialect"]: t.id for t in merged.targets.values()}
    assert merged.tables["toy"].to_json() == {
        by_dialect["terse"]: words["terse"] + words["terse-again"],
        by_dialect["verbose"]: words["verbose"],
    }


def test_a_toy_suite_adds_its_setting_to_pytest_infer_compare(
    toy: pytest.Pytester, toy_installed: Suite, capsys: pytest.CaptureFixture[str]
):
    """``Suite.cli``: the toy suite's argument to ``pytest-infer compare`` becomes its gate setting."""
    with FakeServer() as server:
        run(toy, server, "base").assert_outcomes(passed=1)
        server.set_deviation(fewer_words())
        run(toy, server, "cand").assert_outcomes(passed=1)
    files = [str(toy.path / name / "results.json") for name in ("base", "cand")]
    capsys.readouterr()
    assert cli(["compare", *files]) == 1
    assert "[toy] toy.words:" in capsys.readouterr().out
    assert cli(["compare", *files, "--toy-tolerance=1000"]) == 0
    out = capsys.readouterr().out
    assert (
        "upgrade gate: PASS: no regressions" in out and "rules: toy.words may drop by 1000" in out
    )


def test_a_toy_suite_names_its_bundled_folder_to_pytest_infer_path(
    toy: pytest.Pytester, toy_installed: Suite, capsys: pytest.CaptureFixture[str]
):
    """``Suite.cli``'s ``folders()``: ``pytest-infer path`` offers the toy's folder beside the core's and the SLO's."""
    with pytest.raises(SystemExit):
        cli(["path", "no-such-folder"])
    assert "(choose from 'suites', 'slo', 'toy')" in capsys.readouterr().err
    assert (
        cli(["path", "slo"]) == 0 and (Path(capsys.readouterr().out.strip()) / "cpu.yaml").is_file()
    )


def test_a_table_of_a_suite_not_installed_here_is_kept_whole(toy: pytest.Pytester, tmp_path):
    """``pytest-infer report`` and ``merge`` where the toy suite is not registered: its table survives, unrendered."""
    with FakeServer() as server:
        run(toy, server, "base").assert_outcomes(passed=1)
    source = toy.path / "base" / "results.json"
    results = SessionResults.read(source)
    assert isinstance(results.tables["toy"], RawTable)
    assert cli(["merge", str(source), str(source), "-o", str(tmp_path / "merged.json")]) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert (
        merged["toy"] == json.loads(source.read_text())["toy"]
    )  # same server twice: one column, the table kept
    assert (
        cli(
            [
                "report",
                str(tmp_path / "merged.json"),
                "-o",
                str(tmp_path / "out"),
                "--no-step-summary",
            ]
        )
        == 0
    )
    assert "toy" in json.loads((tmp_path / "merged.json").read_text())


def test_the_bundled_suites_are_registered_as_entry_points():
    names = [s.name for s in installed()]
    assert names == ["conformance", "consistency", "slo", "structured", "robustness", "security"]
    assert installed()[-1].runs_last


def test_a_suite_names_its_table_as_module_and_class_and_gets_it_on_first_use():
    assert (
        Suite("kept", "a raw table", table="pytest_infer.table:RawTable").table_type() is RawTable
    )
    assert Suite("plain", "no table of its own").table_type() is Table
    assert {s.name: s.table_type().__name__ for s in installed()}["slo"] == "SloTable"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "pytest_infer.no_such_module:Table",
            "suite 'broken': cannot load its table 'pytest_infer.no_such_module:Table'",
        ),
        ("pytest_infer.table:NoSuchTable", "suite 'broken': cannot load its table"),
        (
            "pytest_infer.table:Cell",
            "suite 'broken': its table 'pytest_infer.table:Cell' is no pytest_infer.Table",
        ),
    ],
    ids=["no-module", "no-class", "not-a-table"],
)
def test_a_table_that_cannot_be_loaded_names_its_suite(spec: str, message: str):
    with pytest.raises(SuiteError, match=message):
        Suite("broken", "its table is wrong", table=spec).table_type()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("pytest_infer.no_such_module:CLI", "suite 'broken': cannot load its command-line part"),
        (
            "pytest_infer.slo.cli",
            "its cli 'pytest_infer.slo.cli' must be 'module:attribute', naming a SuiteCli",
        ),
        (
            "pytest_infer.slo.cli:SloCli",
            "its cli 'pytest_infer.slo.cli:SloCli' is a type, not a pytest_infer.SuiteCli",
        ),
    ],
    ids=["no-module", "a-module-not-an-instance", "a-class-not-an-instance"],
)
def test_a_cli_part_that_is_no_suite_cli_names_its_suite(spec: str, message: str):
    """``Suite.cli`` names a ``SuiteCli`` instance, whose every method the command calls: anything else is refused
    when the command loads it, so the command never asks a suite what it happens to define."""
    with pytest.raises(SuiteError, match=message):
        Suite("broken", "its cli is wrong", cli=spec).command_line()
    assert Suite("plain", "no command-line part").command_line() is None
    assert {s.name: type(s.command_line()).__name__ for s in installed() if s.cli} == {
        "slo": "SloCli"
    }


def test_two_suites_of_one_name_are_refused():
    with pytest.raises(SuiteError, match="two suites are named 'toy'"):
        by_name([Suite("toy", "one"), Suite("toy", "another")])


def test_a_suite_may_not_take_a_reserved_name():
    with pytest.raises(SuiteError, match="'tests': must be an identifier and not one of"):
        Suite("tests", "would overwrite the test records", table=Table)


def test_a_suite_named_twice_by_conftests_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makeconftest(
        "from pytest_infer import Suite\ndef pytest_infer_suites():\n    return [Suite('slo', 'a second slo')]\n"
    )
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: two suites are named 'slo'*"])
