"""Markdown of the results model, for ``$GITHUB_STEP_SUMMARY`` and pull-request comments."""
from __future__ import annotations

import os
from pathlib import Path

from ..results.model import SessionResults
from ..results.views import check_matrix, keyword_matrix, keyword_status, slo_points, target_label
from .terminal import SYMBOLS, headline

ICONS = {"passed": "✅ pass", "failed": "❌ FAIL", "error": "💥 ERROR", "unsupported": "➖ unsup", "xfail": "⚠️ xfail", "fixed": "🎉 FIXED", "not_run": "⛔ not run", "skipped": "⏭ skip"}
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return out


def render_markdown(results: SessionResults, gate=None, title: str = "pytest-infer") -> str:
    ids = list(results.targets)
    labels = [target_label(results.targets[t]) for t in ids]
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
    lines += _table(["target", "framework", "version", "model", "profile", "state"], [
        [t.id, t.framework, t.version or "unknown", t.model, t.profile or "-", f"failed to start: {t.error.splitlines()[0]}" if t.error else "ok"]
        for t in results.targets.values()
    ])
    matrix = check_matrix(results)
    if matrix:
        lines += ["", "### Checks", ""]
        lines += _table(["check", *labels], [[row, *(ICONS.get(c[t].outcome, SYMBOLS.get(c[t].outcome, c[t].outcome)) if t in c else "-" for t in ids)] for row, c in matrix.items()])
    keywords = keyword_matrix(results)
    if keywords:
        lines += ["", "### Structured output: keyword x outcome", ""]
        lines += _table(["keyword", *labels], [
            [k, *(f"{keyword_status(c[t])} ({', '.join(f'{n} {o}' for o, n in c[t].items() if n)})" if t in c else "-" for t in ids)]
            for k, c in keywords.items()
        ])
    points = slo_points(results)
    if points:
        lines += ["", "### SLO load points", ""]
        lines += _table(["target", "load point", "verdict", "figures"], [
            [target_label(results.targets[p.target]) if p.target in results.targets else p.target, p.key, p.verdict or "?",
             ", ".join(f"{m}={v:.4g}" for m, v in (headline(p.metrics) or p.metrics).items())]
            for p in points
        ])
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
