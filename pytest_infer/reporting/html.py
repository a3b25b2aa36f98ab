"""A self-contained HTML report: the matrix, the gate and the plots in one file that renders offline.

No scripts, no external style sheets or fonts: figures are inline SVG, the style
is inline CSS, and every value from the results is escaped.
"""
from __future__ import annotations

import html
import json

from ..results.model import SessionResults
from ..results.views import Views, build_views
from ..suite import Section

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}
th{background:#f3f3f3}td.passed,td.valid{background:#e8f5e9}td.failed,td.error,td.invalid{background:#ffcdd2;font-weight:bold}
td.unsupported,td.rejected,td.skipped,td.not_run,td.not_exercised{background:#eceff1}td.xfail,td.truncated{background:#fff8e1}td.fixed{background:#c8e6c9;font-weight:bold}
.verdict{font-size:1.3em;padding:.4em .8em;display:inline-block;border-radius:4px}.pass{background:#c8e6c9}.fail{background:#ffcdd2}.none{background:#eceff1}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0}svg{max-width:100%;height:auto}
pre{background:#f7f7f7;padding:.5em;white-space:pre-wrap;font-size:.8em}details{margin:.2em 0}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(header: list[str], rows: list[str], id_: str) -> str:
    return f'<table id="{id_}"><thead><tr>{"".join(f"<th>{_e(h)}</th>" for h in header)}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _section(section: Section, views: Views, id_: str, checks: bool = False) -> str:
    """A section as a table; failing check cells get their message and reproducer below it."""
    rows, details = [], []
    for row, cells in section.rows.items():
        tds = []
        for t in views.ids:
            cell = cells.get(t)
            if cell is None:
                tds.append("<td>-</td>")
                continue
            small = f" <small>{_e(cell.detail[:300])}</small>" if cell.detail and not checks else ""
            tds.append(f'<td class="{_e(cell.css)}" title="{_e(cell.detail[:500])}">{_e(cell.text)}{small}</td>')
            check = views.checks.get(row, {}).get(t) if checks else None
            if check is not None and check.outcome in ("failed", "error", "fixed") and (check.message or check.reproducer):
                details.append(f"<details><summary>{_e(row)} on {_e(views.label(t))}: {_e(check.outcome)}</summary>"
                               f"<pre>{_e(check.message[:4000])}</pre>{f'<pre>{_e(check.reproducer)}</pre>' if check.reproducer else ''}</details>")
        rows.append(f"<tr><td>{_e(row)}</td>{''.join(tds)}</tr>")
    return f"<h2>{_e(section.title)}</h2>" + _table([section.heading, *views.labels], rows, id_) + "".join(details)


def _gate(gate) -> str:
    if gate is None:
        return ""
    css = "none" if not gate.pairs else "fail" if gate.failed else "pass"
    rows = [f'<tr><td class="{"failed" if f.kind == "regression" else "passed" if f.kind == "improvement" else ""}">{_e(f.kind)}</td>'
            f"<td>{_e(f.area)}</td><td>{_e(f.subject)}</td><td>{_e(f.before)}</td><td>{_e(f.after)}</td><td>{_e(f.pair)}</td><td>{_e(f.detail)}</td></tr>"
            for f in gate.findings]
    pairs = ", ".join(gate.pair_labels or [f"{b} -> {c}" for b, c in gate.pairs])
    return (f'<h2>Upgrade gate</h2><p id="verdict" class="verdict {css}">{_e(gate.verdict)}</p><p>Compared: {_e(pairs or "nothing")}; '
            f'rules: {_e(", ".join(gate.rules) or "none")}</p>' + "".join(f"<p><strong>warning:</strong> {_e(w)}</p>" for w in gate.warnings)
            + (_table(["kind", "area", "subject", "before", "after", "targets", "detail"], rows, "findings") if rows else ""))


def _plots(results: SessionResults, views: Views) -> str:
    figures = [figure for table in results.tables.values() for figure in table.figures(views.label)]
    if not figures:
        return ""
    shown = [f'<figure class="plot"><figcaption>{_e(t)}</figcaption>{svg}</figure>' for t, svg in figures if svg]
    missing = [t for t, svg in figures if not svg]
    note = f"<p>Nothing to plot for: {_e(', '.join(missing))} (no such figures in these results).</p>" if missing else ""
    return f'<h2>Plots</h2><div class="plots">{"".join(shown)}</div>{note}'


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>{body}</body></html>\n")


def render_html(results: SessionResults, gate=None, title: str = "pytest-infer report", views: Views | None = None) -> str:
    views = views or build_views(results)
    targets = _table(["target", "framework", "version", "model", "profile", "state", "tests"], [
        f"<tr><td>{_e(t.id)}</td><td>{_e(t.framework)}</td><td>{_e(t.version or 'unknown')}</td><td>{_e(t.model)}</td>"
        f"<td>{_e(t.profile or '-')}</td><td>{_e('failed to start: ' + t.error.splitlines()[0] if t.error else 'ok')}</td>"
        f"<td>{_e(views.outcome_counts(t.id))}</td></tr>"
        for t in results.targets.values()
    ], "targets")
    env = f"<details><summary>Environment</summary><pre>{_e(json.dumps(results.environment, indent=1))}</pre></details>"
    checks = _section(views.sections[0], views, "matrix", checks=True) if views.checks else "<h2>Checks</h2><p>No checks were recorded.</p>"
    suites = "".join(_section(s, views, s.suite) for s in views.suite_sections if s.rows)
    return page(title, _gate(gate) + "<h2>Targets</h2>" + targets + env + checks + suites + _plots(results, views))
