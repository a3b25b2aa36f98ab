"""A self-contained HTML report: the matrix, the gate and the plots in one file that renders offline.

No scripts, no external style sheets or fonts: figures are inline SVG, the style
is inline CSS, and every value from the results is escaped.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from ..results.model import SessionResults
from ..results.views import check_matrix, keyword_matrix, keyword_status, slo_points, target_label
from . import plots
from .terminal import SYMBOLS

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}
th{background:#f3f3f3}td.passed,td.valid{background:#e8f5e9}td.failed,td.error,td.invalid{background:#ffcdd2;font-weight:bold}
td.unsupported,td.rejected,td.skipped,td.not_run{background:#eceff1}td.xfail,td.truncated{background:#fff8e1}td.fixed{background:#c8e6c9;font-weight:bold}
.verdict{font-size:1.3em;padding:.4em .8em;display:inline-block;border-radius:4px}.pass{background:#c8e6c9}.fail{background:#ffcdd2}.none{background:#eceff1}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0}svg{max-width:100%;height:auto}
pre{background:#f7f7f7;padding:.5em;white-space:pre-wrap;font-size:.8em}details{margin:.2em 0}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(header: list[str], rows: list[str], id_: str) -> str:
    return f'<table id="{id_}"><thead><tr>{"".join(f"<th>{_e(h)}</th>" for h in header)}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _matrix(results: SessionResults, ids: list[str], labels: list[str]) -> str:
    matrix = check_matrix(results)
    if not matrix:
        return "<p>No checks were recorded.</p>"
    rows, details = [], []
    for row, cells in matrix.items():
        tds = []
        for t in ids:
            cell = cells.get(t)
            if cell is None:
                tds.append("<td>-</td>")
                continue
            tds.append(f'<td class="{_e(cell.outcome)}" title="{_e(cell.message[:500])}">{_e(SYMBOLS.get(cell.outcome, cell.outcome))}</td>')
            if cell.outcome in ("failed", "error", "fixed") and (cell.message or cell.reproducer):
                details.append(f"<details><summary>{_e(row)} on {_e(labels[ids.index(t)])}: {_e(cell.outcome)}</summary>"
                               f"<pre>{_e(cell.message[:4000])}</pre>{f'<pre>{_e(cell.reproducer)}</pre>' if cell.reproducer else ''}</details>")
        rows.append(f"<tr><td>{_e(row)}</td>{''.join(tds)}</tr>")
    return _table(["check", *labels], rows, "matrix") + "".join(details)


def _keywords(results: SessionResults, ids: list[str], labels: list[str]) -> str:
    matrix = keyword_matrix(results)
    if not matrix:
        return ""
    rows = []
    for keyword, cells in matrix.items():
        tds = "".join(
            f'<td class="{_e(keyword_status(cells[t]))}">{_e(keyword_status(cells[t]))} <small>{_e(", ".join(f"{n} {o}" for o, n in cells[t].items() if n))}</small></td>'
            if t in cells else "<td>-</td>" for t in ids
        )
        rows.append(f"<tr><td>{_e(keyword)}</td>{tds}</tr>")
    return "<h2>Structured output: keyword x outcome</h2>" + _table(["keyword", *labels], rows, "keywords")


def _slo(results: SessionResults) -> str:
    points = slo_points(results)
    if not points:
        return ""
    rows = []
    for p in points:
        label = target_label(results.targets[p.target]) if p.target in results.targets else p.target
        figures = ", ".join(f"{m}={v:.4g}" for m, v in p.metrics.items())
        runs = max((len(v) for v in p.runs.values()), default=0)
        rows.append(f'<tr><td>{_e(label)}</td><td>{_e(p.key)}</td><td class="{"passed" if p.verdict == "pass" else "failed" if p.verdict == "fail" else ""}">{_e(p.verdict or "?")}</td>'
                    f"<td>{runs}</td><td>{_e(figures)}</td></tr>")
    return "<h2>SLO load points</h2>" + _table(["target", "load point", "verdict", "runs", "figures (median of runs)"], rows, "slo")


def _gate(gate) -> str:
    if gate is None:
        return ""
    css = "none" if not gate.pairs else "fail" if gate.failed else "pass"
    rows = [f'<tr><td class="{"failed" if f.kind == "regression" else "passed" if f.kind == "improvement" else ""}">{_e(f.kind)}</td>'
            f"<td>{_e(f.area)}</td><td>{_e(f.subject)}</td><td>{_e(f.before)}</td><td>{_e(f.after)}</td><td>{_e(f.pair)}</td><td>{_e(f.detail)}</td></tr>"
            for f in gate.findings]
    pairs = ", ".join(gate.pair_labels or [f"{b} -> {c}" for b, c in gate.pairs])
    return (f'<h2>Upgrade gate</h2><p id="verdict" class="verdict {css}">{_e(gate.verdict)}</p><p>Compared: {_e(pairs or "nothing")}; '
            f'rules: {_e(", ".join(gate.rules) or "none")}</p>' + "".join(f"<p><strong>warning:</strong> {_e(w)}</p>" for w in gate.warnings) + (_table(["kind", "area", "subject", "before", "after", "targets", "detail"], rows, "findings") if rows else ""))


def _plots(results: SessionResults) -> str:
    figures = [
        ("TTFT CDF per framework version", plots.ttft_cdf(results)),
        ("Output throughput against concurrency", plots.against_concurrency(results, ("output_tps", "output_tokens_per_s", "throughput"), "output throughput v concurrency")),
        ("TTFT against concurrency", plots.against_concurrency(results, ("ttft_p50", "ttft_p99", "ttft_mean"), "TTFT v concurrency")),
        ("Keyword matrix", plots.keyword_heatmap(results)),
    ]
    shown = [f'<figure class="plot"><figcaption>{_e(t)}</figcaption>{svg}</figure>' for t, svg in figures if svg]
    missing = [t for t, svg in figures if not svg]
    note = f"<p>Nothing to plot for: {_e(', '.join(missing))} (no such figures in these results).</p>" if missing else ""
    return f'<h2>Plots</h2><div class="plots">{"".join(shown)}</div>{note}'


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>{body}</body></html>\n")


def render_html(results: SessionResults, gate=None, title: str = "pytest-infer report") -> str:
    ids = list(results.targets)
    labels = [target_label(results.targets[t]) for t in ids]
    if len(set(labels)) < len(labels):
        labels = ids
    targets = _table(["target", "framework", "version", "model", "profile", "state"], [
        f"<tr><td>{_e(t.id)}</td><td>{_e(t.framework)}</td><td>{_e(t.version or 'unknown')}</td><td>{_e(t.model)}</td>"
        f"<td>{_e(t.profile or '-')}</td><td>{_e('failed to start: ' + t.error.splitlines()[0] if t.error else 'ok')}</td></tr>"
        for t in results.targets.values()
    ], "targets")
    env = f"<details><summary>Environment</summary><pre>{_e(json.dumps(results.environment, indent=1))}</pre></details>"
    body = (_gate(gate) + "<h2>Targets</h2>" + targets + env + "<h2>Checks</h2>" + _matrix(results, ids, labels)
            + _keywords(results, ids, labels) + _slo(results) + _plots(results))
    return page(title, body)


def write_html(path: Path, text: str) -> Path:
    """Atomic like the results file: a report is never left half-written."""
    from ..results.model import atomic_write_text

    atomic_write_text(path, text)
    return path
