"""The test outcomes live in one table, ``pytest_infer.outcomes.Outcome``: no module of the package
spells an outcome as a string of its own, and every report draws every outcome.

A string equal to an outcome's name elsewhere is a second table in the making: the reports drifted
apart that way before (a cell class no style sheet knew, a matrix keyed by pytest's ``xfailed``
where the results say ``xfail``).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from pytest_infer.outcomes import Outcome
from pytest_infer.reporting import html, markdown, terminal
from pytest_infer.results.model import SessionResults, TargetRecord
from pytest_infer.results.model import TestRecord as Record
from pytest_infer.results.views import build_views

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_infer"
NAMES = frozenset(o.value for o in Outcome)
# Where an outcome's name means something else, by module and the definition that says it.
OTHER_WORDS = {
    ("conformance/registry.py", "CHECK_SEVERITIES"): "a check's severity",
    ("conformance/registry.py", "CheckRegistry.check"): "a check's severity, by default",
    ("conformance/failures.py", "CheckFailure.__init__"): "a check's severity, by default",
    ("conformance/declarations.py", "load_file"): "a section of an expectations file",
    ("conformance/checks/responses.py", "TERMINAL"): "a Responses object's status",
    ("conformance/checks/responses.py", "STATUSES"): "a Responses object's status",
    ("conformance/checks/messages.py", "anthropic_error_problems"): "Anthropic's error type",
    ("conformance/checks/chat.py", "request_fields"): "what a server did with a field",
    ("structured/classify.py", "MATRIX_CLASSES"): "a keyword's class of answers",
    ("structured/classify.py", "AnswerClass.matrix_class"): "a keyword's class of answers",
    ("structured/table.py", "KEYWORD_CLASSES"): "a keyword's class of answers",
    ("structured/table.py", "WRONG_KEYWORD"): "a keyword's class of answers",
    ("structured/judge.py", "judge_support"): "what a server does with a schema",
    ("slo/table.py", "RESERVED"): "an SLO entry's field names",
    ("slo/metrics/catalogue.py", "CATALOGUE"): "the failed requests' metric",
    ("security/stall.py", "REQUEST_FAILED"): "what became of a hostile request",
    ("server/pool.py", "ServerInfo.take"): "a server's field names",
    ("vendor/bisect.py", "GOOD"): "a bisection's verdict on a release",
    ("reporting/history.py", "MARKS"): "a gate finding's mark in the history",
}


def _definition(stack: list[ast.AST]) -> str:
    """``Class.method``, ``function`` or ``NAME``: the definition a node is in."""
    names = []
    for node in stack:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and not names:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            first = targets[0].elts[0] if isinstance(targets[0], ast.Tuple) else targets[0]
            names += [first.id] if isinstance(first, ast.Name) else []
    return ".".join(names)


def _is_key(node: ast.Constant, parent: ast.AST) -> bool:
    """The name of a field (a JSON object's ``"error"``, a record's ``"passed"``)."""
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    if isinstance(parent, ast.Dict) and node in parent.keys:
        return True
    if isinstance(parent, ast.Compare) and parent.left is node:
        return all(isinstance(op, ast.In | ast.NotIn) for op in parent.ops)
    getter = isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
    return getter and parent.func.attr in ("get", "pop", "setdefault") and parent.args[:1] == [node]


def outcome_literals(source: str, module: str, excused: set | None = None) -> list[str]:
    """``module:line: 'name'`` for each string equal to an outcome's name that is neither a field
    name nor one of ``OTHER_WORDS`` (those it meets are added to ``excused``)."""
    found = []

    def visit(node: ast.AST, stack: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            spelt = isinstance(child, ast.Constant) and child.value in NAMES
            if spelt and not _is_key(child, node):
                where = (module, _definition(stack))
                if where in OTHER_WORDS:
                    (excused if excused is not None else set()).add(where)
                else:
                    found.append(f"{module}:{child.lineno}: {child.value!r}")
            visit(child, [*stack, child])

    visit(ast.parse(source), [])
    return found


def test_no_module_spells_an_outcome() -> None:
    """The fake servers answer in the APIs' words, and ``outcomes.py`` is the table itself. An entry
    of ``OTHER_WORDS`` that excuses nothing is gone: it would excuse the next literal there."""
    modules = sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if p.name != "outcomes.py" or p.parent != PACKAGE
        if "testing" not in p.relative_to(PACKAGE).parts
    )
    excused: set[tuple[str, str]] = set()
    found = []
    for path in modules:
        module = path.relative_to(PACKAGE).as_posix()
        found += outcome_literals(path.read_text(), module, excused)
    assert not found, "\n".join(["outcome names outside pytest_infer/outcomes.py:", *found])
    assert set(OTHER_WORDS) == excused, f"excusing nothing: {set(OTHER_WORDS) - excused}"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('PASSING = {"passed", "fixed"}', ["m.py:1: 'passed'", "m.py:1: 'fixed'"]),
        ('def f(t):\n    return t.outcome == "not_run"', ["m.py:2: 'not_run'"]),
        ('CELLS = {"a": "xfail"}', ["m.py:1: 'xfail'"]),
        ('x = data["error"] if "error" in data else data.get("error")', []),
        ('{"error": {"message": "m"}}', []),
        ('GOOD = "inconclusive"', ["m.py:1: 'inconclusive'"]),
    ],
)
def test_the_scan_finds_a_spelt_outcome(source: str, found: list[str]) -> None:
    """The scan can fail: a set, a comparison or a table's value is found; a field name is not."""
    assert outcome_literals(source, "m.py") == found


def _results() -> SessionResults:
    """One test of each outcome against one target."""
    results = SessionResults()
    results.targets["t"] = TargetRecord(id="t", framework="fake", version="1", model="m")
    for o in Outcome:
        results.add_test(Record(f"test_{o.value}[t]", "t", o.value, message="m"))
    return results


def test_every_report_draws_every_outcome() -> None:
    """The terminal's matrix and verdict, the Markdown cells and the HTML classes each know every
    outcome: none falls back to its bare name or to an unstyled cell."""
    results = _results()
    views = build_views(results)
    terminal_text = "\n".join(terminal.render_summary(results, views))
    counts = terminal.verdict_counts(Counter(o.value for o in Outcome))
    markdown_text = markdown.render_markdown(results)
    style = html.outcome_style()
    for outcome in Outcome:
        assert views.checks[f"test_{outcome.value}"]["t"].symbol == outcome.symbol
        row = rf"^test_{outcome.value} +{re.escape(outcome.symbol)}$"
        assert re.search(row, terminal_text, re.MULTILINE)
        assert f"1 {outcome.label}" in counts
        assert f"| test_{outcome.value} | {outcome.icon} {outcome.label} |" in markdown_text
        assert f"td.{outcome.value}" in style and outcome.colour in style
    report = html.render_html(results)
    assert all(f'class="{outcome.value}"' in report for outcome in Outcome)


def test_the_outcome_orders() -> None:
    """Severity puts every step away from a pass before the passes, and a broken test first; the
    gate's judged outcomes are the passes, the deviations and the refusal."""
    worst_first = Outcome.worst_first()
    assert worst_first[0] is Outcome.ERROR
    assert set(worst_first[-2:]) == {Outcome.FIXED, Outcome.PASSED}
    assert len({o.severity for o in Outcome}) == len(Outcome)
    assert {o for o in Outcome if o.judged} == {
        Outcome.PASSED, Outcome.FIXED, Outcome.FAILED, Outcome.XFAIL, Outcome.UNSUPPORTED,
    }  # fmt: skip
    assert {o for o in Outcome if o.finding} == {Outcome.FAILED, Outcome.ERROR}
