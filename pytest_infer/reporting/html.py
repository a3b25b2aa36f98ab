"""A self-contained HTML report: the verdict, the findings by root cause, the figures against their
limits, then the matrix, the gate's list and the plots, in one file that renders offline.

No scripts, no external style sheets or fonts: figures are inline SVG, the style
is inline CSS, folds are ``<details>``, and every value from the results is escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import TypeVar

from ..outcomes import MissingExtra, Outcome
from ..results.model import SessionResults
from ..results.views import PROBLEMS, Problem, Views, build_views
from ..table import Section
from .terminal import target_state, verdict_counts

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}
th{background:#f3f3f3}
.verdict{font-size:1.3em;padding:.3em .8em;display:inline-block;border-radius:4px;margin:.2em 0}
.pass{background:#c8e6c9}.fail{background:#ffcdd2}.none{background:#eceff1}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0}svg{max-width:100%;height:auto}
pre{background:#f7f7f7;padding:.5em;white-space:pre-wrap;font-size:.8em}details{margin:.2em 0}
#findings li{margin:.3em 0}
.sev{display:inline-block;min-width:4.5em;text-align:center;border-radius:3px;font-size:.8em;
padding:0 .3em;margin-right:.4em}
.sev.critical{background:#c62828;color:#fff}.sev.major{background:#ffcdd2}.sev.minor{background:#fff8e1}
.where,.ref{color:#555;font-size:.9em}
"""
# The suites' own cell classes, each drawn as the outcome it reads as.
DRAWN_AS = {
    "valid": Outcome.PASSED,
    "invalid": Outcome.FAILED,
    "rejected": Outcome.SKIPPED,
    "truncated": Outcome.XFAIL,
}


def outcome_style() -> str:
    """Each outcome's cell, and the classes drawn as it: its colour, in bold where notable."""
    rules = []
    for outcome in Outcome:
        classes = [outcome.value, *(c for c, drawn in DRAWN_AS.items() if drawn is outcome)]
        bold = ";font-weight:bold" if outcome.notable else ""
        rules.append(f"{','.join(f'td.{c}' for c in classes)}{{background:{outcome.colour}{bold}}}")
    return "\n".join(rules)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(header: list[str], rows: list[str], id_: str) -> str:
    return (
        "<table"
        f' id="{id_}"><thead><tr>{"".join(f"<th>{_e(h)}</th>" for h in header)}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _section(
    section: Section, views: Views, id_: str, checks: bool = False, title: str = ""
) -> str:
    """A section as a table (a check cell's message is its tooltip: the findings show failures in
    full).
    """
    rows = []
    for row, cells in section.rows.items():
        tds = []
        for t in views.ids:
            cell = cells.get(t)
            if cell is None:
                tds.append("<td>-</td>")
                continue
            small = f" <small>{_e(cell.detail[:300])}</small>" if cell.detail and not checks else ""
            tds.append(
                f'<td class="{_e(cell.css)}" '
                f'title="{_e(cell.detail[:500])}">{_e(cell.text)}{small}</td>'
            )
        rows.append(f"<tr><td>{_e(row)}</td>{''.join(tds)}</tr>")
    return f"<h2>{_e(title or section.title)}</h2>" + _table(
        [section.heading, *views.labels], rows, id_
    )


def _checks(views: Views) -> str:
    """The rows where something failed or the targets differ; the full matrix one click away."""
    if not views.checks:
        return "<h2>Checks</h2><p>No checks were recorded.</p>"
    notable = views.notable_checks()
    shown = (
        _section(notable, views, "matrix-notable", checks=True, title="Checks: failed or differing")
        if notable.rows
        else "<h2>Checks</h2><p>Every check had the same outcome on every target, and none "
        "failed.</p>"
    )
    full = views.sections[0]
    return (
        shown
        + f"<details><summary>Full check matrix ({len(full.rows)} rows)</summary>"
        + _section(full, views, "matrix", checks=True).removeprefix(f"<h2>{_e(full.title)}</h2>")
        + "</details>"
    )


def _evidence(views: Views) -> str:
    """What each pass judged, one row per passed cell, behind a fold: a pass is read by what it
    saw.
    """
    found = views.evidence()
    if not found:
        return ""
    rows = [
        f"<tr><td>{_e(row)}</td><td>{_e(label)}</td><td>{_e(text)}</td></tr>"
        for row, label, text in found
    ]
    return (
        f"<details><summary>What each pass judged ({len(found)} passes)</summary>"
        + _table(["check", "target", "evidence"], rows, "evidence")
        + "</details>"
    )


def _gate_verdict(gate) -> str:
    """The gate's verdict, what it compared, its warnings and its regressions: the top of the
    verdict block.
    """
    if gate is None:
        return ""
    css = "fail" if gate.failed else "none" if gate.incomplete else "pass"
    pairs = ", ".join(gate.pair_labels or [f"{b} -> {c}" for b, c in gate.pairs])
    regressions = "".join(
        f"<li>{_e(f.kind)}: {_e(f.line())}</li>"
        for f in (*gate.of("regression"), *gate.of("missing"))
    )
    return (
        f'<p id="verdict" class="verdict {css}">{_e(gate.verdict)}</p><p>Upgrade gate. Compared:'
        f" {_e(pairs or 'nothing')}; rules: {_e(', '.join(gate.rules) or 'none')}</p>"
        + "".join(f"<p>timing: {_e(t)}</p>" for t in gate.timing)
        + "".join(f"<p><strong>warning:</strong> {_e(w)}</p>" for w in gate.warnings)
        + (f'<ul id="regressions">{regressions}</ul>' if regressions else "")
    )


def _verdict(views: Views, gate) -> str:
    """The answer first: the gate's verdict, then one row per suite with each target's counts of
    each outcome.
    """
    cells: dict[str, dict[str, str]] = {}
    for target, suite, counts in views.verdict_rows():
        problem = any(counts.get(o) for o in PROBLEMS)
        css = Outcome.FAILED if problem else "invalid" if counts.get("invalid") else Outcome.PASSED
        cells.setdefault(suite, {})[target] = f'<td class="{css}">{_e(verdict_counts(counts))}</td>'
    body = [
        f"<tr><td>{_e(suite)}</td>{''.join(row.get(t, '<td>-</td>') for t in views.ids)}</tr>"
        for suite, row in cells.items()
    ]
    table = (
        _table(["suite", *views.labels], body, "verdict-counts")
        if body
        else "<p>No tests were recorded.</p>"
    )
    return f'<section id="verdict-block"><h2>Verdict</h2>{_gate_verdict(gate)}{table}</section>'


def _finding(problem: Problem) -> str:
    cause = problem.cause
    n = len(problem.places)
    ref = (
        f' <span class="ref">Known upstream: {_e(cause.reference)}.</span>'
        if cause.reference
        else ""
    )
    fold = f"<pre>{_e(problem.brief()[:4000])}</pre>" if problem.message else ""
    if problem.reproducer:
        fold += f"<p>Reproduce:</p><pre>{_e(problem.reproducer)}</pre>"
    if problem.server_log:
        fold += f"<p>Server log while it ran:</p><pre>{_e(problem.server_log[-4000:])}</pre>"
    fold = (
        f"<details><summary>message, reproducer, server log</summary>{fold}</details>"
        if fold
        else ""
    )
    return (
        f'<li><span class="sev {_e(cause.severity)}">{_e(cause.severity)}</span>'
        f"<strong>{_e(cause.title[:400])}</strong> "
        f'<span class="where">{n} place{"s" if n > 1 else ""}: '
        f"{_e(problem.where())}</span>{ref}{fold}</li>"
    )


def _findings(views: Views) -> str:
    if not views.problems:
        return '<h2 id="findings-heading">Findings</h2><p id="findings">Nothing failed.</p>'
    failed = sum(len(p.tests) for p in views.problems)
    return (
        f'<h2 id="findings-heading">Findings: {len(views.problems)} root causes of {failed} failed '
        "tests</h2>"
        f'<ol id="findings">{"".join(map(_finding, views.problems))}</ol>'
    )


def _limits(views: Views) -> str:
    """Each load point's figures against their limits; the full figure set behind a fold."""
    if not views.limits:
        return ""
    invalid = "".join(
        f"<p><strong>{_e(views.label(lim.target))} {_e(lim.title)}: invalid measurement</strong>: "
        f"{_e(lim.invalid)}</p>"
        for lim in views.limits
        if lim.invalid
    )
    rows = [
        f"<tr><td>{_e(views.label(lim.target))}</td><td>{_e(lim.title)}</td>"
        f'<td class="{_e(VERDICT_CSS.get(lim.verdict, ""))}">{_e(lim.verdict)}</td>'
        f"<td>{_e(m)}</td><td>{_e(limit)}</td>"
        f'<td class="{_e(css)}">{_e(measured)}</td><td>{_e(margin)}</td></tr>'
        for lim in views.limits
        for m, limit, measured, margin, css in lim.rows
    ]
    table = (
        _table(
            ["target", "point", "verdict", "metric", "limit", "measured", "margin"], rows, "limits"
        )
        if rows
        else ""
    )
    names = list(dict.fromkeys(k for lim in views.limits for k in lim.figures))
    every = [
        "<tr><td>"
        + _e(k)
        + "</td>"
        + "".join(f"<td>{_e(lim.figures.get(k, '-'))}</td>" for lim in views.limits)
        + "</tr>"
        for k in names
    ]
    columns = [f"{views.label(lim.target)} {lim.title}" for lim in views.limits]
    fold = (
        f"<details><summary>Every figure ({len(names)} per"
        f" point)</summary>{_table(['figure', *columns], every, 'figures')}</details>"
        if names
        else ""
    )
    return f"<h2>Figures against their limits</h2>{invalid}{table}{fold}"


VERDICT_CSS = {"pass": Outcome.PASSED, "fail": Outcome.FAILED, "invalid": "invalid"}


# A gate finding's cell: a regression drawn as a failure, an improvement as a pass.
FINDING_CSS = {"regression": Outcome.FAILED, "improvement": Outcome.PASSED}


def _differences(gate) -> str:
    if gate is None or not gate.findings:
        return ""
    rows = [
        "<tr><td"
        f' class="{FINDING_CSS.get(f.kind, "")}">'
        f"{_e(f.kind)}</td><td>{_e(f.area)}</td><td>{_e(f.subject)}</td><td>{_e(f.before)}</td><td>{_e(f.after)}</td>"
        f"<td>{_e(f.pair)}</td><td>{_e(f.detail)}</td></tr>"
        for f in gate.findings
    ]
    return "<h2>Differences from the baseline</h2>" + _table(
        ["kind", "area", "subject", "before", "after", "targets", "detail"], rows, "differences"
    )


Figure = TypeVar("Figure")  # (title, svg): optional or not


def drawn(figures: Callable[[], list[Figure]]) -> tuple[list[Figure], str]:
    """The figures, or none and a note naming the extra that draws them: a report without plots is
    still a report.
    """
    try:
        return figures(), ""
    except MissingExtra as exc:
        return [], f"<p>Plots skipped: {_e(str(exc))}.</p>"


def _plots(results: SessionResults, views: Views) -> str:
    figures, skipped = drawn(
        lambda: [
            figure for table in results.tables.values() for figure in table.figures(views.label)
        ]
    )
    if skipped:
        return f"<h2>Plots</h2>{skipped}"
    if not figures:
        return ""
    shown = [
        f'<figure class="plot"><figcaption>{_e(t)}</figcaption>{svg}</figure>'
        for t, svg in figures
        if svg
    ]
    missing = [t for t, svg in figures if not svg]
    note = (
        f"<p>Nothing to plot for: {_e(', '.join(missing))} (no such figures in these results).</p>"
        if missing
        else ""
    )
    return f'<h2>Plots</h2><div class="plots">{"".join(shown)}</div>{note}'


def page(title: str, body: str) -> str:
    style = f"<style>{STYLE}{outcome_style()}</style>"
    head = f'<meta charset="utf-8"><title>{_e(title)}</title>{style}'
    shown = f"<body><h1>{_e(title)}</h1>{body}</body>"
    return f'<!DOCTYPE html><html lang="en"><head>{head}</head>{shown}</html>\n'


def render_html(
    results: SessionResults,
    gate=None,
    title: str = "pytest-infer report",
    views: Views | None = None,
) -> str:
    views = views or build_views(results)
    targets = _table(
        ["target", "framework", "version", "model", *views.variants, "state", "tests"],
        [
            f"<tr><td>{_e(t.id)}</td><td>{_e(t.framework)}</td>"
            f"<td>{_e(t.version or 'unknown')}</td>"
            f"<td>{_e(t.model)}</td>"
            + "".join(f"<td>{_e(t.variant.get(v, '-'))}</td>" for v in views.variants)
            + f"<td>{_e(target_state(t))}</td>"
            f"<td>{_e(views.outcome_counts(t.id))}</td></tr>"
            for t in results.targets.values()
        ],
        "targets",
    )
    environment = _e(json.dumps(results.environment, indent=1))
    env = f"<details><summary>Environment</summary><pre>{environment}</pre></details>"
    suites = "".join(_section(s, views, s.suite) for s in views.suite_sections if s.rows)
    return page(
        title,
        _verdict(views, gate)
        + _findings(views)
        + _limits(views)
        + _checks(views)
        + _evidence(views)
        + suites
        + _differences(gate)
        + "<h2>Targets</h2>"
        + targets
        + env
        + _plots(results, views),
    )
