"""Vendor regression tracking: successive versions of a framework as a trend.

Results of many versions (one file each, or merged) are ordered by version per
framework; every figure a suite marks as a trend (SLO figures) becomes a line
across versions, and for every other row (checks, keywords, counts) the report
names the first version where it changed.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..results.model import SessionResults
from ..results.views import Views, build_views, version_key
from . import plots
from .html import _e, _table, page


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


def changes(results: SessionResults, views: Views | None = None) -> list[Change]:
    """For every row that is not a trend, each version where its cell differs from the version before."""
    views = views or build_views(results)
    found = []
    for framework, ids in versions_by_framework(results).items():
        for section in views.sections:
            area = section.heading.split()[-1]
            for subject, cells in section.rows.items():
                if subject in section.trends:
                    continue
                previous = None
                for tid in ids:
                    if tid not in cells:
                        continue
                    now = cells[tid].text
                    if previous is not None and now != previous:
                        found.append(Change(framework, area, subject, results.targets[tid].version or tid, previous, now))
                    previous = now
    return found


def trend_figures(results: SessionResults, views: Views | None = None) -> list[tuple[str, str]]:
    """``[(title, svg)]``: per framework, one figure per trend (a metric), a line per series (a load point)."""
    views = views or build_views(results)
    figures = []
    for framework, ids in versions_by_framework(results).items():
        if len(ids) < 2:
            continue
        versions = [results.targets[t].version or t for t in ids]
        grouped: dict[str, dict[str, list[float | None]]] = {}
        for section in views.sections:
            for row, (figure, line) in section.trends.items():
                for tid, cell in section.rows.get(row, {}).items():
                    if tid in ids and cell.value is not None:
                        grouped.setdefault(figure, {}).setdefault(line, [None] * len(ids))[ids.index(tid)] = cell.value
        figures += [(f"{framework}: {figure}", plots.trend(versions, series, figure)) for figure, series in grouped.items()]
    return figures


def render_history(results: SessionResults, title: str = "pytest-infer history") -> str:
    order = versions_by_framework(results)
    body = "<h2>Versions</h2>" + _table(["framework", "versions, oldest first"], [
        f"<tr><td>{_e(fw)}</td><td>{_e(', '.join(results.targets[t].version or t for t in ids))}</td></tr>" for fw, ids in order.items()
    ], "versions")
    views = build_views(results)
    found = changes(results, views)
    body += "<h2>First version where each check or keyword changed</h2>"
    body += _table(["framework", "area", "subject", "before", "after", "first in"], [
        f"<tr><td>{_e(c.framework)}</td><td>{_e(c.area)}</td><td>{_e(c.subject)}</td><td>{_e(c.before)}</td><td>{_e(c.after)}</td><td>{_e(c.version)}</td></tr>"
        for c in found
    ], "changes") if found else "<p>No check or keyword changed between versions.</p>"
    figures = trend_figures(results, views)
    body += '<h2>Trends</h2><div class="plots">' + "".join(f'<figure class="plot"><figcaption>{_e(t)}</figcaption>{svg}</figure>' for t, svg in figures) + "</div>"
    if not figures:
        body += "<p>No SLO figures recorded for two or more versions of one framework.</p>"
    return page(title, body)
