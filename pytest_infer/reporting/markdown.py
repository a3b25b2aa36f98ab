"""Markdown of the results model, for ``$GITHUB_STEP_SUMMARY`` and pull-request comments.

It opens with the answer (the verdict, the findings by root cause, the figures
against their limits) and stays under a pull-request comment's size: parts that
do not fit are left out, with a note and a link to the full HTML report.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..outcomes import Outcome
from ..results.model import SessionResults
from ..results.views import PROBLEMS, Problem, Views, build_views
from ..table import Cell, Section
from .terminal import target_state, verdict_counts

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
MAX_DETAIL = 200
# GitHub's limit on a pull-request comment (a step summary may hold 1 MiB): the summary stays under
# it.
MAX_CHARS = 65536
MAX_MESSAGE = 1500
NOTE_ROOM = 800  # kept free for the truncation note and its link


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return out


def _text(cell: Cell, checks: bool) -> str:
    """A check's cell as its outcome's icon and label; one whose text is not its outcome's symbol
    (``FAIL(w)``) keeps its text."""
    if checks and (outcome := Outcome.of(cell.css)):
        return f"{outcome.icon} {outcome.label if cell.text == outcome.symbol else cell.text}"
    if checks:
        return cell.text
    return f"{cell.text} ({cell.detail[:MAX_DETAIL]})" if cell.detail else cell.text


def section_lines(
    section: Section, views: Views, checks: bool = False, title: str = ""
) -> list[str]:
    rows = [
        [row, *(_text(cells[t], checks) if t in cells else "-" for t in views.ids)]
        for row, cells in section.rows.items()
    ]
    return [
        "",
        f"### {title or section.title}",
        "",
        *_table([section.heading, *views.labels], rows),
    ]


def _fence(text: str, lang: str = "") -> str:
    fence = "~~~~" if "```" in text else "```"
    return f"{fence}{lang}\n{text}\n{fence}"


def verdict_units(views: Views, gate) -> list[str]:
    """The gate's verdict with its regressions, then one row per suite with each target's counts of
    each outcome.
    """
    units = ["", "### Verdict", ""]
    if gate is not None:
        units += [f"**Upgrade gate: {gate.verdict}**", ""]
        units += [f"- timing: {t}" for t in gate.timing]
        units += [f"- {f.kind}: {f.line()}" for f in (*gate.of("regression"), *gate.of("missing"))]
        units += [f"> ⚠️ {w}\n" for w in gate.warnings]
        units.append("")
    cells: dict[str, dict[str, str]] = {}
    for target, suite, counts in views.verdict_rows():
        problem = any(counts.get(o) for o in PROBLEMS)
        mark = f"{Outcome.FAILED.icon} " if problem else "⚠️ " if counts.get("invalid") else ""
        cells.setdefault(suite, {})[target] = mark + verdict_counts(counts)
    body = [[suite, *(row.get(t, "-") for t in views.ids)] for suite, row in cells.items()]
    return units + (_table(["suite", *views.labels], body) if body else ["No tests were recorded."])


def finding_head(n: int, problem: Problem) -> str:
    """One root cause in one line: severity, what, where (count and places), upstream reference."""
    cause = problem.cause
    ref = f" Known upstream: {cause.reference}." if cause.reference else ""
    places = (
        f"{len(problem.places)} place{'s' if len(problem.places) > 1 else ''}: "
        f"{_cell(problem.where())}"
    )
    return f"{n}. **[{cause.severity}]** {_cell(cause.title[:300])} ({places}).{ref}"


def finding_fold(problem: Problem, room: int = MAX_MESSAGE) -> str:
    """Its message, reproducer and server log behind a fold, each cut to ``room`` characters ("" if
    nothing to show).
    """
    fold = [_fence(problem.brief()[:room])] if problem.message else []
    if problem.reproducer:
        fold += ["Reproduce:", _fence(problem.reproducer[:room], "sh")]
    if problem.server_log:
        fold += ["Server log while it ran:", _fence(problem.server_log[-room:])]
    if not fold:
        return ""
    body = "\n\n".join(fold).replace("\n", "\n   ")
    return (
        f"\n   <details><summary>message, reproducer, server log</summary>\n\n   {body}\n\n   "
        "</details>"
    )


def finding_units(views: Views, room: int | None = None) -> list[str]:
    """Every root cause's line; its fold while ``room`` characters last (whole, then cut short, then
    none), in order, so a long list keeps every finding's line and the worst ones keep their
    reproducers."""
    if not views.problems:
        return []
    failed = sum(len(p.tests) for p in views.problems)
    units = ["", f"### Findings: {len(views.problems)} root causes of {failed} failed tests", ""]
    for i, problem in enumerate(views.problems, 1):
        fold = next(
            (
                f
                for f in (finding_fold(problem, c) for c in (MAX_MESSAGE, MAX_MESSAGE // 4))
                if room is None or len(f) <= room
            ),
            "",
        )
        if room is not None:
            room -= len(fold)
        units.append(finding_head(i, problem) + fold)
    return units


def limits_units(views: Views) -> list[str]:
    """Every load point's figures against their limits, one table; an invalid measurement says why
    in one line.
    """
    if not views.limits:
        return []
    units = ["", "### Figures against their limits", ""]
    units += [
        f"- **{views.label(lim.target)} {lim.title}: invalid measurement**: {_cell(lim.invalid)}"
        for lim in views.limits
        if lim.invalid
    ]
    rows = [
        [views.label(lim.target), lim.title, lim.verdict, metric, limit, measured, margin]
        for lim in views.limits
        for metric, limit, measured, margin, _ in lim.rows
    ]
    if rows:
        units += _table(
            ["target", "point", "verdict", "metric", "limit", "measured", "margin"], rows
        )
    return units + ["", "Every figure of every point is in results.json and report.html."]


def matrix_units(views: Views) -> list[str]:
    """The check rows where something failed or the targets differ, then the full matrix behind a
    fold.
    """
    if not views.checks:
        return []
    full = views.sections[0]
    notable = views.notable_checks()
    if notable.rows:
        units = section_lines(notable, views, checks=True, title="Checks: failed or differing")
    else:
        units = [
            "",
            "### Checks",
            "",
            "Every check had the same outcome on every target, and none failed.",
        ]
    folded = section_lines(full, views, checks=True)[3:]
    units.append(
        "\n".join(
            [
                "",
                f"<details><summary>Full check matrix ({len(full.rows)} rows)</summary>",
                "",
                *folded,
                "",
                "</details>",
            ]
        )
    )
    return units


def evidence_units(views: Views) -> list[str]:
    """What each pass judged, a row each (cut to ``MAX_DETAIL``): last, so it is what gives way to
    fit the limit.
    """
    found = views.evidence()
    if not found:
        return []
    return ["", f"### What each pass judged ({len(found)} passes)", ""] + _table(
        ["check", "target", "evidence"],
        [[row, label, text[:MAX_DETAIL]] for row, label, text in found],
    )


def _artifact_link(env: dict[str, str]) -> str:
    if all(env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")):
        server, repository, run = (
            env[k] for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
        )
        url = f"{server}/{repository}/actions/runs/{run}"
        return f"the full report is report.html in [this run's artifacts]({url})"
    return "the full report is report.html, written beside this summary"


def fit(units: list[str], limit: int = MAX_CHARS, env: dict[str, str] | None = None) -> str:
    """Join ``units`` (each kept whole: a table row, a finding with its fold) while they fit under
    ``limit`` characters; what does not fit is left out, with a note saying so and where the full
    report is."""
    link = _artifact_link(env if env is not None else dict(os.environ))
    kept, size = [], 0
    for i, unit in enumerate(units):
        if size + len(unit) + 1 > limit - NOTE_ROOM:
            left = sum(1 for u in units[i:] if u.strip())
            kept += [
                "",
                (
                    f"> ✂️ **Truncated** to fit a pull-request comment ({limit} characters): "
                    f"{left} more parts left"
                    f" out; {link}."
                ),
            ]
            break
        kept.append(unit)
        size += len(unit) + 1
    return "\n".join(kept) + "\n"


def render_markdown(
    results: SessionResults,
    gate=None,
    title: str = "pytest-infer",
    views: Views | None = None,
    limit: int = MAX_CHARS,
) -> str:
    """Verdict, findings, figures against limits, the checks that failed or differ, then the rest;
    under ``limit`` characters, the findings' folds get what the verdict, every finding's line, the
    figures and those checks leave."""
    views = views or build_views(results)
    head, tail = (
        [f"## {title}", *verdict_units(views, gate)],
        [*limits_units(views), *matrix_units(views)],
    )
    room = (
        limit - NOTE_ROOM - sum(len(u) + 1 for u in [*head, *finding_units(views, 0), *tail[:-1]])
    )
    units = [*head, *finding_units(views, room), *tail]
    for section in views.suite_sections:
        if section.rows:
            units += section_lines(section, views)
    if gate is not None and gate.findings:
        units += ["", "### Differences from the baseline", ""]
        units += _table(
            ["kind", "area", "subject", "before", "after", "targets", "detail"],
            [
                [f.kind, f.area, f.subject, str(f.before), str(f.after), f.pair, f.detail]
                for f in gate.findings
            ],
        )
    units += ["", "### Targets", ""]
    units += _table(
        ["target", "framework", "version", "model", *views.variants, "state", "tests"],
        [
            [
                t.id,
                t.framework,
                t.version or "unknown",
                t.model,
                *(t.variant.get(label, "-") for label in views.variants),
                target_state(t),
                views.outcome_counts(t.id),
            ]
            for t in results.targets.values()
        ],
    )
    env = results.environment
    if env.get("git", {}).get("commit"):
        units += [
            "",
            (
                f"Project commit `{env['git'].get('describe') or env['git']['commit']}`; Python "
                f"{env.get('python')},"
                f" {env.get('cpu', {}).get('model') or ''} "
                f"x{env.get('cpu', {}).get('count') or '?'}, GPUs:"
                f" {env.get('gpu', {}).get('count', 0)}"
            ),
        ]
    return fit(units + evidence_units(views), limit)


def write_step_summary(markdown: str, env: dict[str, str] | None = None) -> Path | None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when it is set (GitHub Actions appends every step's
    summary).
    """
    target = (env if env is not None else os.environ).get(STEP_SUMMARY_ENV)
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(markdown)
    return Path(target)
