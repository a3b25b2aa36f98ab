"""Everything a finished session writes: results.json, the gate, and every rendering of them.

Shared by the plugin (at the end of a run, in the process that owns the
results) and by ``pytest-infer report`` (re-rendering a saved file), so both
produce the same files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..gating.compare import GateResult, compare
from ..results.model import SessionResults, atomic_write_text
from ..results.views import build_views
from ..table import Measured
from .benchmark import write_benchmark_json
from .html import render_html
from .markdown import render_markdown, write_step_summary

RESULTS_FILE = "results.json"
HTML_FILE = "report.html"
MARKDOWN_FILE = "summary.md"
BENCHMARK_FILE = "benchmark.json"


@dataclass(slots=True)
class Written:
    paths: dict[str, Path]
    gate: GateResult | None
    plot_error: str | None = None


def run_gate(
    results: SessionResults, baseline: Path, settings: Mapping[str, Any] | None = None
) -> GateResult:
    """Compare with the baseline file and keep the verdict in the results themselves. ``settings``:
    each suite's gate settings, by suite name (``Pairing.settings``)."""
    gate = compare(SessionResults.read(baseline, results.suites), results, settings)
    results.gate = {"baseline": str(baseline), **gate.to_dict()}
    return gate


def write_renderings(
    results: SessionResults,
    out: Path,
    *,
    gate: GateResult | None = None,
    title: str = "pytest-infer",
    step_summary: bool = True,
) -> Written:
    """HTML, Markdown (and ``$GITHUB_STEP_SUMMARY``), and pytest-benchmark JSON into ``out``, from
    one set of views.
    """
    views = build_views(results)
    paths: dict[str, Path] = {}
    markdown = render_markdown(results, gate, title, views)
    atomic_write_text(out / MARKDOWN_FILE, markdown)
    paths["markdown"] = out / MARKDOWN_FILE
    if step_summary and (summary := write_step_summary(markdown)):
        paths["step summary"] = summary
    plot_error = None
    try:
        atomic_write_text(out / HTML_FILE, render_html(results, gate, f"{title} report", views))
        paths["html"] = out / HTML_FILE
    except Exception as exc:  # noqa: BLE001 - matplotlib missing or a plotting bug: say so, keep results.json and the rest
        plot_error = f"{type(exc).__name__}: {exc}"
    if any(isinstance(table, Measured) and table.benchmarks() for table in results.tables.values()):
        paths["benchmark json"] = write_benchmark_json(results, out / BENCHMARK_FILE, views)
    return Written(paths, gate, plot_error)


def finish_session(
    results: SessionResults,
    report_dir: Path,
    baseline: Path | None,
    settings: Mapping[str, Any] | None = None,
) -> Written:
    gate = run_gate(results, baseline, settings) if baseline is not None else None
    results.write(report_dir / RESULTS_FILE)
    written = write_renderings(results, report_dir, gate=gate)
    written.paths = {"results": report_dir / RESULTS_FILE, **written.paths}
    return written
