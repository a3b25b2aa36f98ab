"""Markdown of the results model, for ``$GITHUB_STEP_SUMMARY`` and pull-request comments."""
from __future__ import annotations

import os
from pathlib import Path

from ..results.model import SessionResults
from ..results.views import Views, build_views
from ..suite import Cell, Section

ICONS = {
    "passed": "✅ pass", "failed": "❌ FAIL", "error": "💥 ERROR", "unsupported": "➖ unsup", "xfail": "⚠️ xfail", "fixed": "🎉 FIXED",
    "not_run": "⛔ not run", "not_exercised": "◌ not exercised", "skipped": "⏭ skip",
}  # fmt: skip
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
MAX_DETAIL = 200


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return out


def _text(cell: Cell, checks: bool) -> str:
    if checks:
        return ICONS.get(cell.css, cell.text) if cell.text != "FAIL(w)" else "❌ FAIL(w)"
    return f"{cell.text} ({cell.detail[:MAX_DETAIL]})" if cell.detail else cell.text


def section_lines(section: Section, views: Views, checks: bool = False) -> list[str]:
    rows = [[row, *(_text(cells[t], checks) if t in cells else "-" for t in views.ids)] for row, cells in section.rows.items()]
    return ["", f"### {section.title}", "", *_table([section.heading, *views.labels], rows)]


def render_markdown(results: SessionResults, gate=None, title: str = "pytest-infer", views: Views | None = None) -> str:
    views = views or build_views(results)
    lines = [f"## {title}", ""]
    if gate is not None:
        lines += [f"**Upgrade gate: {gate.verdict}**", ""]
        lines += [f"> ⚠️ {w}\n" for w in gate.warnings]
    env = results.environment
    if env.get("git", {}).get("commit"):
        lines.append(f"Project commit `{env['git'].get('describe') or env['git']['commit']}`; "
                     f"Python {env.get('python')}, {env.get('cpu', {}).get('model') or ''} x{env.get('cpu', {}).get('count') or '?'}, "
                     f"GPUs: {env.get('gpu', {}).get('count', 0)}")
        lines.append("")
    lines += _table(["target", "framework", "version", "model", "profile", "state", "tests"], [
        [t.id, t.framework, t.version or "unknown", t.model, t.profile or "-", f"failed to start: {t.error.splitlines()[0]}" if t.error else "ok", views.outcome_counts(t.id)]
        for t in results.targets.values()
    ])
    for i, section in enumerate(views.sections):
        if section.rows:
            lines += section_lines(section, views, checks=i == 0)
    if gate is not None and gate.findings:
        lines += ["", "### Differences from the baseline", ""]
        lines += _table(["kind", "area", "subject", "before", "after", "targets", "detail"], [
            [f.kind, f.area, f.subject, str(f.before), str(f.after), f.pair, f.detail] for f in gate.findings
        ])
    return "\n".join(lines) + "\n"


def write_step_summary(markdown: str, env: dict[str, str] | None = None) -> Path | None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when it is set (GitHub Actions appends every step's summary)."""
    target = (env if env is not None else os.environ).get(STEP_SUMMARY_ENV)
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(markdown)
    return Path(target)
