"""Reports people read first: the verdict on top, failures folded into their root causes, SLO figures against
their limits, the matrix cut to the rows that matter, and Markdown that fits a pull-request comment."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # loaded once here: pytester's in-process runs cannot re-import numpy

from results_factory import session  # noqa: E402

from pytest_infer.gating.compare import compare  # noqa: E402
from pytest_infer.reporting.html import render_html  # noqa: E402
from pytest_infer.reporting.markdown import MAX_CHARS, render_markdown  # noqa: E402
from pytest_infer.reporting.outputs import write_renderings  # noqa: E402
from pytest_infer.reporting.terminal import render_summary  # noqa: E402
from pytest_infer.results import model  # noqa: E402
from pytest_infer.results.model import SessionResults, combine  # noqa: E402
from pytest_infer.results.views import build_views  # noqa: E402
from pytest_infer.slo.rules import parse_rules  # noqa: E402
from pytest_infer.slo.settings import gate_settings  # noqa: E402
from tests.reporting.test_renderings import chromium  # noqa: E402

PATHS = ("response_format", "response_format-stream", "native")
CORPUS = (
    "Failed: length-with-pattern: 2 of 3 seeds broke the schema (length bounds dropped next to pattern (xgrammar#749;"
    " vllm#45592))\n  output: 'abcdefgh'"
)
REFUSAL = "Failed: malformed schema 'negative-minLength': server-error instead of a 4xx: HTTP 500: Internal server error"
ENVELOPE = (
    "Failed: {t}: bad request '{case}': HTTP 400 without the error envelope: no 'error' object (top-level keys:"
    " ['detail']); body: '{{}}'"
)


def fail(
    results: SessionResults, nodeid: str, suite: str, message: str, target: str = "vllm", **extra
) -> None:
    results.add_test(
        model.TestRecord(
            nodeid=nodeid,
            target=target,
            outcome="failed",
            suite=suite,
            message=message,
            reproducer="curl -sS http://127.0.0.1:8000/v1/chat/completions -d '{}'",
            extra=extra,
        )
    )


def main_job(version: str = "0.32.0", passing: int = 200, target: str = "vllm") -> SessionResults:
    """Shaped like the README main job: a long passing matrix; one corpus case and one bad-schema refusal failing on
    every request path; one envelope problem on two bad inputs; a conformance warning."""
    results = session(version, target=target)
    for i in range(passing):
        results.add_test(
            model.TestRecord(
                nodeid=f"suites/conformance/test_conformance.py::test_check[extra.check-{i}-{target}]",
                target=target,
                outcome="passed",
                suite="conformance",
                check=f"extra.check-{i}",
            )
        )
    for path in PATHS:
        fail(
            results,
            f"suites/structured/test_corpus.py::test_known_bug_class[{path}-{target}-length-with-pattern]",
            "structured",
            CORPUS,
            target,
            server_log=(
                "Warning: pattern combined with minLength/maxLength is not supported; ignoring minLength/maxLength"
            ),
        )
        fail(
            results,
            f"suites/structured/test_survival.py::test_bad_schema_is_refused[{path}-{target}-negative-minLength]",
            "structured",
            REFUSAL,
            target,
        )
    for case in ("invalid_utf8", "deeply_nested_json"):
        fail(
            results,
            f"suites/robustness/test_robustness_bad_input.py::test_bad_request_is_refused[{target}-{case}]",
            "robustness",
            ENVELOPE.format(t=target, case=case),
            target,
        )
    fail(
        results,
        f"suites/conformance/test_conformance.py::test_check[errors.envelope-types-{target}]",
        "conformance",
        "Failed: [errors.envelope-types] error.code is 400, not a string (warning)",
        target,
        severity="warning",
    )
    results.tests[-1].check = "errors.envelope-types"
    return results


def test_the_same_failure_on_three_request_paths_is_one_finding_with_three_places():
    views = build_views(main_job())
    by_title = {p.cause.title.split(":")[0]: p for p in views.problems}
    corpus = by_title["length-with-pattern"]
    assert corpus.places == [("vllm 0.32.0", path) for path in PATHS] and len(corpus.tests) == 3
    assert (
        corpus.cause.severity == "critical" and corpus.cause.reference == "xgrammar#749, vllm#45592"
    )  # the corpus names them
    assert "ignoring minLength/maxLength" in corpus.server_log and corpus.reproducer.startswith(
        "curl "
    )
    refusal = next(p for p in views.problems if "negative-minLength" in p.cause.title)
    assert len(refusal.places) == 3 and refusal.cause.severity == "major"
    envelope = next(
        p for p in views.problems if p.suite == "robustness"
    )  # one bad-input class, two bad inputs
    assert [place for _, place in envelope.places] == [
        "invalid_utf8",
        "deeply_nested_json",
    ] and envelope.cause.severity == "minor"
    assert len(views.problems) == 4 and sum(len(p.tests) for p in views.problems) == 9
    # worst first, then the widest: the silent wrong answer, the 500s, then the two minor ones (two places before one)
    assert [p.cause.severity for p in views.problems] == ["critical", "major", "minor", "minor"]
    assert views.problems[2] is envelope


def test_one_check_failing_on_two_targets_is_one_finding_placed_on_both():
    merged = combine([("a", main_job("0.31.0")), ("b", main_job("0.32.0"))])
    views = build_views(merged)
    corpus = next(p for p in views.problems if p.cause.title.startswith("length-with-pattern"))
    assert (
        len(corpus.places) == 6
        and corpus.where()
        == "vllm 0.31.0: response_format, response_format-stream, native; "
        "vllm 0.32.0: response_format, response_format-stream, native"
    )
    assert len(views.problems) == 4


def test_the_tests_that_met_one_dead_server_are_one_critical_finding_whatever_their_suite():
    results = main_job()
    died = "Failed: vllm: the server process 4242 has died; last lines of its log:\nKilled"
    fail(
        results,
        "suites/robustness/test_robustness_bad_input.py::test_bad_request_is_refused[vllm-lone_surrogate]",
        "robustness",
        died,
    )
    fail(
        results,
        "suites/structured/test_probes.py::test_grammar_masks[vllm-enum]",
        "structured",
        died,
    )
    (first,) = [p for p in build_views(results).problems if "4242" in p.cause.title]
    assert (
        first.cause.title == "the server process died (pid 4242): the tests after it could not run"
        and first.cause.severity == "critical"
    )
    assert first.suite == "" and [p for _, p in first.places] == [
        "test_bad_request_is_refused[lone_surrogate]",
        "test_grammar_masks[enum]",
    ]


def test_every_rendering_opens_with_the_verdict_then_the_findings():
    results = main_job()
    lines = render_summary(results)
    assert (
        lines[0].startswith("vllm 0.32.0: conformance ")
        and "structured 6 FAIL" in lines[0]
        and "robustness 2 FAIL" in lines[0]
    )
    assert lines[1] == "findings: 4 root causes of 9 failed tests"
    assert lines[2].startswith("  [critical] length-with-pattern: 2 of 3 seeds") and lines[
        2
    ].endswith("[xgrammar#749, vllm#45592]")
    assert (
        lines[3].strip() == "3 places: vllm 0.32.0: response_format, response_format-stream, native"
    )
    md = render_markdown(results)
    assert (
        md.index("### Verdict")
        < md.index("### Findings: 4 root causes of 9 failed tests")
        < md.index("### Checks")
        < md.index("### Targets")
    )
    assert "| suite | vllm 0.32.0 |" in md and "| structured | ❌ 6 FAIL |" in md
    page = render_html(results)
    assert (
        page.index('id="verdict-block"')
        < page.index('id="findings"')
        < page.index('id="matrix-notable"')
        < page.index('id="matrix"')
    )


def test_with_a_baseline_the_verdict_is_the_gate_with_its_regressions():
    base, cand = main_job("0.31.0"), main_job("0.32.0")
    cand.tests[0].outcome = "failed"
    gate = compare(base, cand, gate_settings(parse_rules("ttft_p99:10%")))
    md = render_markdown(cand, gate)
    verdict = md[md.index("### Verdict") : md.index("### Findings")]
    assert (
        f"**Upgrade gate: {gate.verdict}**" in verdict
        and f"- regression: {gate.of('regression')[0].line()}" in verdict
    )
    assert render_summary(cand, gate=gate)[1] == f"upgrade gate: {gate.verdict}"


def with_limits(results: SessionResults) -> SessionResults:
    """SLO entries as the suite records them: each threshold's check, one point repeated, one invalid."""
    table = results.table("slo")
    table.entries.clear()
    for i, ttft in enumerate((40.0, 44.0, 42.0)):
        table.add(
            {
                "target": "vllm",
                "profile": "cpu",
                "load_point": "c8",
                "concurrency": 8,
                "verdict": "pass",
                "failures": [],
                "metrics": {
                    "ttft_p99_ms": ttft,
                    "output_tokens_per_s": 300.0 + i,
                    "attainment": 0.99,
                },
                "checks": [
                    {
                        "name": "ttft_p99_ms",
                        "measured": ttft,
                        "limit": 600.0,
                        "op": "<=",
                        "ok": True,
                    },
                    {
                        "name": "min_output_tokens_per_s",
                        "measured": 300.0 + i,
                        "limit": 400.0,
                        "op": ">=",
                        "ok": False,
                    },
                    {
                        "name": "min_goodput_share",
                        "measured": 0.99,
                        "limit": 0.95,
                        "op": ">=",
                        "ok": True,
                    },
                ],
            }
        )
    table.add(
        {
            "target": "vllm",
            "profile": "cpu",
            "load_point": "c64",
            "concurrency": 64,
            "verdict": "invalid",
            "failures": [
                "measurement invalid: the load client was busy 97% of the window (limit 90%)"
            ],
            "metrics": {"ttft_p99_ms": 9.0},
            "checks": [
                {"name": "ttft_p99_ms", "measured": 9.0, "limit": 600.0, "op": "<=", "ok": True}
            ],
        }
    )
    return results


def test_slo_points_are_figures_against_their_limits_with_units_intervals_and_margins():
    views = build_views(with_limits(session()))
    c8, c64 = views.limits
    assert (c8.title, c8.verdict, c64.verdict) == ("cpu/c8", "pass", "invalid")
    rows = {r[0]: r[1:] for r in c8.rows}
    limit, measured, margin, css = rows["ttft_p99_ms"]
    assert limit == "<= 600 ms" and measured == "42 ms (range 40 ms to 44 ms, 3 runs)", measured
    assert margin == "93% headroom" and css == "passed"
    assert rows["min_output_tokens_per_s"][0] == ">= 400 tokens/s" and rows[
        "min_output_tokens_per_s"
    ][2:] == (
        "25% past the limit",
        "failed",
    )
    assert rows["min_goodput_share"][:2] == (">= 95%", "99% (range 99% to 99%, 3 runs)")
    assert c64.invalid == "the load client was busy 97% of the window (limit 90%)"
    md = render_markdown(views.results, views=views)
    assert (
        "- **vllm 0.31.0 cpu/c64: invalid measurement**: the load client was busy 97% of the window (limit 90%)"
        in md
    )
    assert (
        "| vllm 0.31.0 | cpu/c8 | pass | min_output_tokens_per_s | >= 400 tokens/s | 301 tokens/s (range "
        in md
    )
    page = render_html(views.results, views=views)
    limits, figures = page.index('id="limits"'), page.index('id="figures"')
    assert (
        limits < figures and page.rfind("<details>", 0, figures) > limits
    )  # the full figure set is behind a fold
    assert [r[2] for r in views.verdict_rows() if r[1] == "slo"][0]["invalid"] == 1


def test_limits_of_an_estimated_profile_say_so_in_every_report():
    results = with_limits(session())
    for entry in results.table("slo").entries:
        entry["thresholds_source"] = "estimated"
    views = build_views(results)
    c8 = views.limits[0]
    assert {r[0]: r[1] for r in c8.rows}["ttft_p99_ms"] == "<= 600 ms (estimated)"
    assert (
        "| vllm 0.31.0 | cpu/c8 | pass | ttft_p99_ms | <= 600 ms (estimated) |"
        in render_markdown(results, views=views)
    )
    assert "&lt;= 600 ms (estimated)" in render_html(results, views=views)
    terminal = render_summary(results, views)
    assert any(line.split()[:3] == ["cpu/c8", "thresholds", "estimated"] for line in terminal)
    measured = with_limits(session())
    assert "(estimated)" not in "\n".join(render_summary(measured)) + render_markdown(measured)


def test_a_tail_figure_over_eight_runs_is_their_median_between_two_of_the_runs():
    """One slow run of eight: the mean's t-interval would reach below zero; the median's stays among the runs."""
    results = session()
    table = results.table("slo")
    table.entries.clear()
    for ttft in (14.0, 12.0, 13.0, 15.0, 900.0, 16.0, 13.0, 14.0):
        table.add(
            {
                "target": "vllm",
                "profile": "cpu",
                "load_point": "c16",
                "concurrency": 16,
                "verdict": "pass",
                "failures": [],
                "metrics": {"ttft_p99_ms": ttft},
                "checks": [
                    {
                        "name": "ttft_p99_ms",
                        "measured": ttft,
                        "limit": 600.0,
                        "op": "<=",
                        "ok": True,
                    }
                ],
            }
        )
    (point,) = build_views(results).limits
    assert point.rows[0][:3] == ("ttft_p99_ms", "<= 600 ms", "14 ms [12 ms, 900 ms] (8 runs)")


def test_with_several_targets_the_matrix_shows_what_differs_or_failed_and_folds_the_rest():
    merged = combine(
        [
            ("a", main_job("0.31.0")),
            ("b", main_job("0.32.0")),
            ("c", main_job("5.24.0", target="transformers")),
        ]
    )
    merged.tests.append(
        model.TestRecord(
            nodeid="t.py::test_check[only.vllm-vllm]",
            target="vllm",
            outcome="passed",
            suite="conformance",
            check="only.vllm",
        )
    )
    views = build_views(merged)
    notable = views.notable_checks()
    assert (
        "only.vllm" in notable.rows and "errors.envelope-types" in notable.rows
    )  # missing elsewhere; failed everywhere
    assert (
        "extra.check-7" not in notable.rows and "chat.basic" not in notable.rows
    )  # passed everywhere
    page = render_html(merged, views=views)
    shown = page[
        page.index('id="matrix-notable"') : page.index(
            "</table>", page.index('id="matrix-notable"')
        )
    ]
    assert "extra.check-7" not in shown and "only.vllm" in shown
    fold = page.index("<summary>Full check matrix (")
    assert page.index('id="matrix"') > fold and "extra.check-7" in page[fold:]
    assert "<script" not in page.lower()
    md = render_markdown(merged, views=views)
    assert (
        md.index("| errors.envelope-types |")
        < md.index("<details><summary>Full check matrix (")
        < md.index("| extra.check-7 |")
    )


def test_markdown_with_500_failures_fits_a_pull_request_comment(monkeypatch: pytest.MonkeyPatch):
    results = main_job()
    for i in range(500):
        fail(
            results,
            f"suites/structured/test_corpus.py::test_known_bug_class[native-vllm-case-{i}]",
            "structured",
            f"Failed: case-{i}: 3 of 3 seeds broke the schema\n" + "violation detail " * 40,
            server_log="log line " * 50,
        )
    for key, value in {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_RUN_ID": "7",
    }.items():
        monkeypatch.setenv(key, value)
    md = render_markdown(results)
    assert len(md) < MAX_CHARS
    assert (
        md.startswith("## pytest-infer\n\n### Verdict")
        and "### Findings: 504 root causes of 509 failed tests" in md
    )
    note = md.rstrip().splitlines()[-1]
    assert note.startswith("> ✂️ **Truncated** to fit a pull-request comment (65536 characters):")
    assert "[this run's artifacts](https://github.com/o/r/actions/runs/7)" in note
    assert md.count("<details>") == md.count("</details>")  # whole findings only: no fold left open


def test_the_merged_upgrade_gate_report_fits_with_every_finding_the_figures_and_the_differing_checks():
    """Four targets' long tail of failures: every finding keeps its line, the figures table and the failed or
    differing checks stay; the folds get what is left, worst findings first, and the full matrix is cut."""
    base, cand = with_limits(main_job("0.31.0")), with_limits(main_job("0.32.0"))
    for i in range(150):  # a long tail of failures, each on every request path
        for results in (base, cand):
            for path in PATHS:
                fail(
                    results,
                    f"suites/structured/test_generated.py::test_case[{path}-vllm-c{i}]",
                    "structured",
                    f"Failed: c{i}: violation\n" + "x" * 400,
                )
    gate = compare(base, cand, gate_settings(parse_rules("ttft_p99:10%")))
    merged = combine([("base", base), ("cand", cand)])
    merged.gate = {"baseline": "base", **gate.to_dict()}
    md = render_markdown(merged, gate, "pytest-infer upgrade gate")
    assert len(md) < MAX_CHARS and "**Upgrade gate: " in md.split("### Findings")[0]
    assert "### Findings: 154 root causes of 918 failed tests" in md and "\n154. **[" in md
    assert (
        md.index("### Findings")
        < md.index("### Figures against their limits")
        < md.index("### Checks: failed or differing")
    )
    assert "| errors.envelope-types |" in md and md.rstrip().splitlines()[-1].startswith(
        "> ✂️ **Truncated**"
    )
    assert 0 < md.count("<details><summary>message, reproducer, server log") < 154


def test_html_in_a_headless_browser_shows_the_verdict_and_the_findings_in_the_first_screen(
    tmp_path: Path,
):
    """The main job's page in headless Chromium at 1400x900: the verdict table's FAIL counts and the findings'
    severity badges are in the first screen's pixels, and they come before the matrix in the DOM."""
    browser = chromium()
    if browser is None:
        pytest.skip("no headless browser: apt-get install chromium")
    from PIL import Image

    written = write_renderings(main_job(), tmp_path / "infer-report", step_summary=False)
    url = written.paths["html"].resolve().as_uri()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    order = [
        dom.stdout.index(marker)
        for marker in ('id="verdict-block"', 'id="findings"', 'id="matrix-notable"', 'id="matrix"')
    ]
    assert order == sorted(order)
    shot = tmp_path / "infer-report" / "first-screen.png"
    run = subprocess.run(
        [browser, *flags, "--window-size=1400,900", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    colours = {c for _, c in Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)}
    assert (0xFF, 0xCD, 0xD2) in colours  # the verdict's FAIL counts (and the major badge)
    assert (0xC6, 0x28, 0x28) in colours  # the critical finding's badge
    assert (
        0xFF,
        0xF8,
        0xE1,
    ) in colours  # the minor findings' badges: every finding is on the first screen
