"""Vendor regression tracking: successive versions of a framework as a trend.

Results of many versions (one file each, or merged) are ordered by version per
framework; every SLO figure becomes a line across versions, and for every check
and structured keyword the report names the first version where it changed.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..results.model import SessionResults
from ..results.views import check_matrix, keyword_matrix, keyword_status, slo_points, version_key
from . import plots
from .html import _e, _table, page
from .terminal import SYMBOLS, headline


@dataclass(slots=True)
class Change:
    framework: str
    area: str
    subject: str
    version: str
    before: str
    after: str

    def line(self) -> str:
        return f"{self.framework} [{self.area}] {self.subject}: {self.before} -> {self.after} first in {self.version}"


def versions_by_framework(results: SessionResults) -> dict[str, list[str]]:
    """``{framework: [target ids ordered by version]}``."""
    out: dict[str, list[str]] = {}
    for tid, target in results.targets.items():
        out.setdefault(target.framework, []).append(tid)
    return {fw: sorted(ids, key=lambda t: version_key(results.targets[t].version)) for fw, ids in sorted(out.items())}


def changes(results: SessionResults) -> list[Change]:
    """For every check and keyword, each version where its outcome differs from the version before."""
    found = []
    checks, keywords = check_matrix(results), keyword_matrix(results)
    for framework, ids in versions_by_framework(results).items():
        for area, table, word in (("check", checks, lambda c: SYMBOLS.get(c.outcome, c.outcome)), ("keyword", keywords, keyword_status)):
            for subject, cells in table.items():
                previous = None
                for tid in ids:
                    if tid not in cells:
                        continue
                    now = word(cells[tid])
                    if previous is not None and now != previous:
                        found.append(Change(framework, area, subject, results.targets[tid].version or tid, previous, now))
                    previous = now
    return found


def trend_figures(results: SessionResults) -> list[tuple[str, str]]:
    """``[(title, svg)]``: one figure per framework and headline figure, a line per load point."""
    points = slo_points(results)
    figures = []
    for framework, ids in versions_by_framework(results).items():
        if len(ids) < 2:
            continue
        versions = [results.targets[t].version or t for t in ids]
        metrics: dict[str, dict[str, list[float | None]]] = {}
        for point in (p for p in points if p.target in ids):
            for metric, value in headline(point.metrics).items():
                metrics.setdefault(metric, {}).setdefault(point.key, [None] * len(ids))[ids.index(point.target)] = value
        for metric, series in metrics.items():
            figures.append((f"{framework}: {metric}", plots.trend(versions, series, metric)))
    return figures


def render_history(results: SessionResults, title: str = "pytest-infer history") -> str:
    order = versions_by_framework(results)
    body = "<h2>Versions</h2>" + _table(["framework", "versions, oldest first"], [
        f"<tr><td>{_e(fw)}</td><td>{_e(', '.join(results.targets[t].version or t for t in ids))}</td></tr>" for fw, ids in order.items()
    ], "versions")
    found = changes(results)
    body += "<h2>First version where each check or keyword changed</h2>"
    body += _table(["framework", "area", "subject", "before", "after", "first in"], [
        f"<tr><td>{_e(c.framework)}</td><td>{_e(c.area)}</td><td>{_e(c.subject)}</td><td>{_e(c.before)}</td><td>{_e(c.after)}</td><td>{_e(c.version)}</td></tr>"
        for c in found
    ], "changes") if found else "<p>No check or keyword changed between versions.</p>"
    figures = trend_figures(results)
    body += '<h2>Trends</h2><div class="plots">' + "".join(f'<figure class="plot"><figcaption>{_e(t)}</figcaption>{svg}</figure>' for t, svg in figures) + "</div>"
    if not figures:
        body += "<p>No SLO figures recorded for two or more versions of one framework.</p>"
    return page(title, body)
