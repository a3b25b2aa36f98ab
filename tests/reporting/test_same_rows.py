"""Terminal, Markdown and HTML draw the same sections with the same rows and cells: every suite's,
robustness included, because all three render the one set of views."""

from __future__ import annotations

import html
import re

import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # loaded once here: pytester's in-process runs cannot re-import numpy

from results_factory import session  # noqa: E402

from pytest_infer.gating.compare import compare  # noqa: E402
from pytest_infer.reporting.html import render_html  # noqa: E402
from pytest_infer.reporting.markdown import render_markdown  # noqa: E402
from pytest_infer.reporting.terminal import render_summary  # noqa: E402
from pytest_infer.results.model import SessionResults, combine  # noqa: E402
from pytest_infer.results.views import build_views  # noqa: E402
from pytest_infer.slo.rules import parse_rules  # noqa: E402
from pytest_infer.slo.settings import gate_settings  # noqa: E402


def with_robustness(results: SessionResults, target: str, fives: int) -> SessionResults:
    tally = results.table("robustness").tally(target)
    tally.update({"tried": 40, "4xx": 40 - fives, "5xx": fives})
    return results


@pytest.fixture(scope="module")
def gated():
    base = with_robustness(session("0.31.0"), "vllm", 0)
    cand = with_robustness(
        session(
            "0.32.0",
            outcomes={"chat.stop_strings": "failed"},
            keywords={"pattern": {"valid": 2, "invalid": 2}},
            seed=1,
        ),
        "vllm",
        3,
    )
    gate = compare(base, cand, gate_settings(parse_rules("ttft_p99:10%")))
    merged = combine([("base", base), ("cand", cand)])
    return merged, gate


def terminal_rows(lines: list[str], headings: list[str]) -> dict[str, list[str]]:
    rows, heading = {}, None
    for line in lines:
        first = re.split(r"\s{2,}", line.strip())
        if first[0] in headings:
            heading = first[0]
        elif heading and line.strip():
            rows[f"{heading}/{first[0]}"] = first[1:]
        else:
            heading = None
    return rows


def markdown_rows(text: str, headings: list[str]) -> dict[str, list[str]]:
    rows, heading = {}, None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")] if line.startswith("|") else []
        if cells and cells[0] in headings:
            heading = cells[0]
        elif cells and heading and not line.startswith("|---"):
            rows[f"{heading}/{cells[0]}"] = cells[1:]
        elif not cells:
            heading = None
    return rows


def html_rows(page: str, headings: list[str]) -> dict[str, list[str]]:
    rows = {}
    for table in re.findall(
        r"<table id=\"[^\"]*\"><thead><tr>(.*?)</tr></thead><tbody>(.*?)</tbody></table>", page
    ):
        heading = html.unescape(re.findall(r"<th>(.*?)</th>", table[0])[0])
        if heading not in headings:
            continue
        for row in re.findall(r"<tr>(.*?)</tr>", table[1]):
            cells = [
                html.unescape(re.sub(r"<small>.*?</small>", "", c)).strip()
                for c in re.findall(r"<td[^>]*>(.*?)</td>", row)
            ]
            rows[f"{heading}/{cells[0]}"] = cells[1:]
    return rows


def test_the_three_renderers_show_the_same_rows_robustness_included(gated):
    merged, gate = gated
    views = build_views(merged)
    headings = [s.heading for s in views.sections]
    assert headings == ["check", "load point", "structured keyword", "robustness"]
    terminal = terminal_rows(render_summary(merged, views), headings)
    markdown = markdown_rows(render_markdown(merged, gate, views=views), headings)
    page = html_rows(render_html(merged, gate, views=views), headings)
    expected = {f"{s.heading}/{row}" for s in views.sections for row in s.rows}
    assert set(terminal) == set(markdown) == set(page) == expected
    assert terminal["robustness/5xx"] == page["robustness/5xx"] == ["0", "3"]
    assert markdown["robustness/5xx"] == ["0", "3"]
    assert terminal["check/chat.stop_strings"] == ["pass", "FAIL"] and markdown[
        "check/chat.stop_strings"
    ] == [
        "✅ pass",
        "❌ FAIL",
    ]
    assert (
        terminal["structured keyword/pattern"]
        == ["valid", "invalid"]
        == [c.split(" (")[0] for c in markdown["structured keyword/pattern"]]
    )
    assert page["structured keyword/pattern"] == ["valid", "invalid"]
    for key in (k for k in expected if k.startswith("load point/")):
        assert terminal[key] == markdown[key] == page[key], key


def test_the_gate_lists_a_robustness_change_beside_the_regressions(gated):
    _, gate = gated
    (found,) = [f for f in gate.findings if f.area == "robustness"]
    assert (found.kind, found.subject, found.before, found.after) == ("change", "5xx", 0, 3)
    assert "regression" in {f.kind for f in gate.findings if f.area == "check"}
