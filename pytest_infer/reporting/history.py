"""Vendor regression tracking: the upgrade gate run along a framework's release line.

Versions of a framework, oldest first; each sound version is compared with the sound one before it
by the comparison the gate makes (check outcomes, then each suite's table under its settings:
keyword shares, SLO figures with their significance tests), so a timing figure is marked changed
only where the change is significant. A version whose run was cut short or whose server never
started is listed as such and compared with nothing. Each subject's events along the line show a
regression a later release fixed, and a fix that regressed again. Figures the suites mark as trends
are drawn across versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..gating.compare import GateResult, compare, not_judged
from ..results.model import SessionResults, combine
from ..results.views import CheckCell, Views, build_views, version_key
from ..table import Cell, Finding, Measured
from . import plots
from .html import _e, _table, drawn, page

MARKS = {
    "regression": "REGRESSED",
    "missing": "MISSING",
    "improvement": "fixed",
    "change": "changed",
    "noise": "noise",
}
# under GitHub's 65,536-character limit for a comment, with room for a link line
MAX_MARKDOWN = 60_000


@dataclass(slots=True)
class VersionRun:
    framework: str
    target: str
    version: str
    state: str  # "ok", or why the run is not compared: "cut short: ...", "invalid: ..."
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def sound(self) -> bool:
        return self.state == "ok"


@dataclass(slots=True)
class Step:
    """One comparison between consecutive sound versions (and the unsound ones skipped between
    them).
    """

    framework: str
    before: str
    after: str
    result: GateResult
    skipped: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for f in self.result.findings if f.kind != "noise"]


@dataclass(slots=True)
class History:
    versions: dict[str, list[VersionRun]]
    steps: list[Step]
    # per framework: every row (check, keyword, SLO figure, field) whose value differs between its
    # sound versions
    table: dict[str, list[tuple[str, str, list[Cell]]]] = field(default_factory=dict)
    # how each suite's figures were judged (Measured.history_note)
    notes: list[str] = field(default_factory=list)

    @property
    def timing(self) -> str:
        return "; ".join(self.notes)

    def events(self) -> dict[tuple[str, str, str], list[tuple[str, Finding]]]:
        """``{(framework, area, subject): [(version, finding), ...]}`` in release order."""
        out: dict[tuple[str, str, str], list[tuple[str, Finding]]] = {}
        for step in self.steps:
            for f in step.findings:
                out.setdefault((step.framework, f.area, f.subject), []).append((step.after, f))
        return out

    def returns(self) -> list[tuple[str, str, str, list[str]]]:
        """Subjects that moved more than once, each with its marks: regressions fixed and regressed
        again.
        """
        return [
            (*key, [f"{MARKS[f.kind]} in {v}" for v, f in evs])
            for key, evs in self.events().items()
            if len(evs) > 1
        ]


def run_state(results: SessionResults, target: str) -> str:
    """Whether a version's run can be compared: its session ended normally and judged the server
    (the gate's ``not_judged``: a version whose server never became ready, or whose file holds no
    tests, is not a sound step)."""
    run = results.environment.get("run") or {}
    status = run.get("exitstatus")
    if status not in (None, 0, 1):
        return (
            f"cut short: pytest exited {status} ({run.get('ran', '?')} of "
            f"{run.get('collected', '?')} tests recorded)"
        )
    if why := not_judged(results, target):
        return f"invalid: judged nothing: {why}"
    return "ok"


def build_history(
    parts: list[tuple[str, SessionResults]],
    settings: Mapping[str, Any] | None = None,
    in_given_order: bool = False,
) -> tuple[SessionResults, History]:
    """Merge one results file per version (``(source, results)``) and compare each sound version
    with the sound one before it, each suite's table under its ``settings`` (by suite name, as the
    gate takes them).

    Versions are ordered by the version each server reported, or ``in_given_order`` (the parts'
    order: a vendor history's release order, where a build reports a commit, not a number)."""
    settings = dict(settings or {})
    # renames targets that share an id (``vllm`` in every file) in the parts too
    merged = combine(parts)
    states = {tid: run_state(part, tid) for _, part in parts for tid in part.targets}
    views = build_views(merged)
    by_framework: dict[str, list[VersionRun]] = {}
    for tid, target in merged.targets.items():
        counts = dict(views.outcomes.get(tid, {}))
        by_framework.setdefault(target.framework, []).append(
            VersionRun(target.framework, tid, target.version or tid, states.get(tid, "ok"), counts)
        )
    steps = []
    given = {tid: i for i, tid in enumerate(merged.targets)}
    for framework, versions in sorted(by_framework.items()):
        versions.sort(key=lambda v: given[v.target] if in_given_order else version_key(v.version))
        before: VersionRun | None = None
        skipped: list[str] = []
        for v in versions:
            if not v.sound:
                skipped.append(v.version)
                continue
            if before is not None:
                result = compare(
                    merged, merged, settings, pairs={before.target: v.target}, exclusive=True
                )
                _failing_side_reproducers(result, views.checks, before.target)
                steps.append(Step(framework, before.version, v.version, result, skipped))
            before, skipped = v, []
    notes = [
        note
        for name, suite in merged.suites.items()
        if issubclass(table := suite.table_type(), Measured)
        and (note := table.history_note(settings.get(name)))
    ]
    return merged, History(by_framework, steps, _changing_rows(views, by_framework), notes)


def _failing_side_reproducers(
    result: GateResult, matrix: dict[str, dict[str, CheckCell]], before: str
) -> None:
    """A check that was fixed has its reproducer on the side that failed: the change is shown by
    rerunning it there.
    """
    for f in result.findings:
        if (
            f.area == "check"
            and not f.reproducer
            and (cell := matrix.get(f.subject, {}).get(before)) is not None
        ):
            f.reproducer = cell.reproducer


def _changing_rows(
    views: Views, versions: dict[str, list[VersionRun]]
) -> dict[str, list[tuple[str, str, list[Cell]]]]:
    """``{framework: [(area, row, [cell text per sound version])]}`` for rows whose text is not the
    same in every version.

    Figures drawn as trends (SLO load points) are left to their plots and to the steps' significance
    tests: every measured figure differs a little between two runs."""
    out: dict[str, list[tuple[str, str, list[Cell]]]] = {}
    for framework, listed in versions.items():
        ids = [v.target for v in listed if v.sound]
        for section in views.sections:
            for row, cells in section.rows.items():
                if row in section.trends or all(c.value is not None for c in cells.values()):
                    # a measured figure: judged by the steps' significance tests and drawn as a
                    # trend
                    continue
                shown = [cells.get(t, Cell("-")) for t in ids]
                if len({c.text for c in shown}) > 1:
                    out.setdefault(framework, []).append((section.heading, row, shown))
    return out


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _finding(f: Finding) -> str:
    return f"[{f.area}] {f.subject}: {f.before} -> {f.after}" + (
        f" ({f.detail})" if f.detail else ""
    )


def terminal_lines(history: History) -> list[str]:
    lines = []
    for framework, versions in history.versions.items():
        lines.append(
            f"{framework}: "
            + ", ".join(v.version if v.sound else f"{v.version} ({v.state})" for v in versions)
        )
    lines.append(history.timing)
    for step in history.steps:
        skipped = f" (skipping {', '.join(step.skipped)}: not comparable)" if step.skipped else ""
        lines.append(
            f"{step.framework} {step.before} -> {step.after}{skipped}: {step.result.verdict}"
        )
        lines += [f"  {MARKS[f.kind]}: {_finding(f)}" for f in step.findings]
    for framework, area, subject, marks in history.returns():
        lines.append(f"moved more than once: {framework} [{area}] {subject}: {', '.join(marks)}")
    return lines


def render_markdown(history: History, title: str, link: str = "") -> str:
    """The history for a step summary: versions, each step's verdict and findings, then subjects
    that moved back and forth."""
    out = [f"## {title}", "", history.timing + ".", ""]
    out += ["| framework | version | run | outcomes |", "|---|---|---|---|"]
    for versions in history.versions.values():
        for v in versions:
            counts = ", ".join(f"{n} {k}" for k, n in sorted(v.counts.items()))
            out.append(
                f"| {v.framework} | {v.version} | "
                f"{'ok' if v.sound else '**' + _cell(v.state) + '**'} | {counts} |"
            )
    for framework, changing in history.table.items():
        columns = [v.version for v in history.versions[framework] if v.sound]
        out += [
            "",
            f"### {framework}: what differs between versions",
            "",
            "| area | row | " + " | ".join(columns) + " |",
            "|---" * (len(columns) + 2) + "|",
        ]
        out += [
            f"| {_cell(area)} | {_cell(row)} | " + " | ".join(_cell(c.text) for c in shown) + " |"
            for area, row, shown in changing
        ]
    returns = history.returns()
    if returns:
        out += ["", "### Moved more than once", ""] + [
            f"- {fw} [{area}] `{subject}`: {', '.join(marks)}"
            for fw, area, subject, marks in returns
        ]
    for step in history.steps:
        skipped = f" (skipping {', '.join(step.skipped)})" if step.skipped else ""
        out += [
            "",
            f"### {step.framework} {step.before} → {step.after}{skipped}: {step.result.verdict}",
            "",
        ]
        out += [
            f"- **{MARKS[f.kind]}** {_cell(_finding(f))}"
            + (f"\n  `{_cell(f.reproducer)}`" if f.reproducer else "")
            for f in step.findings
        ] or ["- no change"]
    text = "\n".join(out) + "\n"
    if len(text) > MAX_MARKDOWN:
        cut = text[:MAX_MARKDOWN].rsplit("\n", 1)[0]
        text = (
            f"{cut}\n\n… cut at {MAX_MARKDOWN} characters: the whole history is in"
            f" history.html{f' ({link})' if link else ''}\n"
        )
    elif link:
        text += f"\nThe whole history, with trends: {link}\n"
    return text


def trend_figures(results: SessionResults, history: History) -> list[tuple[str, str]]:
    """``[(title, svg)]``: per framework, one figure per trend (a metric), a line per series (a load
    point); sound versions only."""
    views = build_views(results)
    figures = []
    for framework, versions in history.versions.items():
        sound = [v for v in versions if v.sound]
        if len(sound) < 2:
            continue
        ids = [v.target for v in sound]
        grouped: dict[str, dict[str, list[float | None]]] = {}
        for section in views.sections:
            for row, (figure, line) in section.trends.items():
                for tid, cell in section.rows.get(row, {}).items():
                    if tid in ids and cell.value is not None:
                        grouped.setdefault(figure, {}).setdefault(line, [None] * len(ids))[
                            ids.index(tid)
                        ] = cell.value
        figures += [
            (f"{framework}: {figure}", plots.trend([v.version for v in sound], series, figure))
            for figure, series in grouped.items()
        ]
    return figures


def render_history(
    results: SessionResults, history: History, title: str = "pytest-infer history"
) -> str:
    body = f"<p>{_e(history.timing)}.</p><h2>Versions</h2>" + _table(
        ["framework", "version", "run", "outcomes"],
        [
            f"<tr><td>{_e(v.framework)}</td><td>{_e(v.version)}</td>"
            f"<td{'' if v.sound else ' class=fail'}>{_e(v.state)}</td>"
            f"<td>{_e(', '.join(f'{n} {k}' for k, n in sorted(v.counts.items())))}</td></tr>"
            for versions in history.versions.values()
            for v in versions
        ],
        "versions",
    )
    for framework, changing in history.table.items():
        columns = [v.version for v in history.versions[framework] if v.sound]
        cells = [
            f"<tr><td>{_e(area)}</td><td>{_e(row)}</td>"
            + "".join(f'<td class="{_e(c.css)}">{_e(c.text)}</td>' for c in shown)
            + "</tr>"
            for area, row, shown in changing
        ]
        body += f"<h2>{_e(framework)}: what differs between versions</h2>" + _table(
            ["area", "row", *columns], cells, f"differs-{_e(framework)}"
        )
    returns = history.returns()
    if returns:
        body += "<h2>Moved more than once</h2>" + _table(
            ["framework", "area", "subject", "along the releases"],
            [
                f"<tr><td>{_e(fw)}</td><td>{_e(area)}</td><td>{_e(subject)}</td>"
                f"<td>{_e(', '.join(marks))}</td></tr>"
                for fw, area, subject, marks in returns
            ],
            "returns",
        )
    body += "<h2>Release by release</h2>"
    for step in history.steps:
        skipped = f" (skipping {', '.join(step.skipped)}: not comparable)" if step.skipped else ""
        body += (
            f"<h3>{_e(step.framework)} {_e(step.before)} &rarr; {_e(step.after)}{_e(skipped)}:"
            f" {_e(step.result.verdict)}</h3>"
        )
        rows = [
            f"<tr><td>{_e(MARKS[f.kind])}</td><td>{_e(f.area)}</td><td>{_e(f.subject)}</td><td>{_e(f.before)}</td><td>{_e(f.after)}</td>"
            f"<td>{_e(f.detail)}</td><td><code>{_e(f.reproducer)}</code></td></tr>"
            for f in step.findings
        ]
        body += (
            _table(
                ["what", "area", "subject", "before", "after", "detail", "reproducer"],
                rows,
                f"step-{_e(step.after)}",
            )
            if rows
            else "<p>No change.</p>"
        )
    figures, skipped = drawn(lambda: trend_figures(results, history))
    body += (
        '<h2>Trends</h2><div class="plots">'
        + "".join(
            f'<figure class="plot"><figcaption>{_e(t)}</figcaption>{svg}</figure>'
            for t, svg in figures
        )
        + f"</div>{skipped}"
    )
    if not figures and not skipped:
        body += (
            "<p>No suite recorded figures to draw as trends for two or more sound versions of "
            "one framework.</p>"
        )
    return page(title, body)
