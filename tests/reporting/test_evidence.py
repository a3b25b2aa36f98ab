"""What a pass judged (``extra.evidence``, recorded the same way by every suite) is shown in the reports: the HTML
report's check cells and its fold of passes, and a table of passes at the end of summary.md."""

from __future__ import annotations

from pytest_infer.reporting.html import render_html
from pytest_infer.reporting.markdown import render_markdown
from pytest_infer.results import model
from pytest_infer.results.views import build_views

# one pass of each suite, as each records it, and a failure whose evidence the reports must not show as a pass's
PASSES = {
    "security": "2 protected routes answered with the key and refused without it <and with a wrong one>",
    "structured": "POST /v1/chat/completions via response_format: 3 answers, 3 valid",
    "robustness": "POST /v1/chat/completions: the same request without the fault answered correctly",
    "slo": "load point meets (concurrency 2): 20 of 20 measured requests answered; ok ttft_p50_ms: 31 <= 5000",
}


def results() -> model.SessionResults:
    out = model.SessionResults(plugin_version="0.1.0")
    out.targets["vllm"] = model.TargetRecord(
        id="vllm", framework="vllm", model="tiny", version="0.32.0"
    )
    for suite, evidence in PASSES.items():
        out.add_test(
            model.TestRecord(
                nodeid=f"suites/{suite}/test_x.py::test_{suite}[vllm]", target="vllm", outcome="passed", suite=suite,
                extra={"evidence": evidence},
            )
        )  # fmt: skip
    out.add_test(
        model.TestRecord(
            nodeid="suites/security/test_x.py::test_failing[vllm]", target="vllm", outcome="failed", suite="security",
            message="it failed", extra={"evidence": "not a pass's"},
        )
    )  # fmt: skip
    return out


def test_every_suites_pass_shows_what_it_judged_in_the_html_and_the_markdown():
    views = build_views(results())
    assert [(row, text) for row, _, text in views.evidence()] == [
        (f"test_{suite}", evidence) for suite, evidence in PASSES.items()
    ]
    page = render_html(results())
    assert 'id="evidence"' in page and "What each pass judged (4 passes)" in page
    assert (
        "<and with" not in page and "&lt;and with a wrong one&gt;" in page
    )  # escaped, like every value
    assert (
        'title="POST /v1/chat/completions via response_format: 3 answers, 3 valid"' in page
    )  # the matrix cell
    assert "not a pass&#x27;s</td>" not in page
    summary = render_markdown(results())
    assert "### What each pass judged (4 passes)" in summary
    for suite, evidence in PASSES.items():
        assert f"| test_{suite} | vllm 0.32.0 | {evidence} |" in summary
    assert "not a pass's" not in summary
