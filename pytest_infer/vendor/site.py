"""``pytest-infer site DIR``: the stored vendor histories as a static site, written by the reports'
own HTML parts (``reporting.html``), so it needs no build step and deploys as it is (GitHub Pages,
any file server).

Per engine: a release x check table (coloured by outcome, filtered by suite in the page, each
failing cell linking to the failure and its reproducer); per release, what changed since the one
before, as the gate judged it; per check, its outcome as a line across releases; and one page of the
regressions still open, each with its drafted upstream report. Every verdict is drawn again from the
stored runs by the gate as it stands (``build_history``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..gating.compare import code_warnings
from ..outcomes import Outcome
from ..reporting.history import History, build_history
from ..reporting.html import FINDING_CSS, _e, _table, page
from ..results.model import SessionResults, atomic_write_text
from ..results.views import PASSES, PROBLEMS, CheckCell, check_matrix
from ..table import Finding
from .drafts import Draft, drafts
from .engines import ENGINES, Engine
from .store import INDEX, Entry, Store

SITE_STYLE = (
    "<style>nav a{margin-right:1em}td a{color:inherit}td.none{background:#eceff1}"
    ".cards{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid "
    "#ccc;border-radius:6px;padding:.6em 1em}"
    "tr.hidden{display:none}</style>"
)
# the suite filter, also from the address (``index.html#suite=structured``), so a filtered table can
# be linked to
FILTER_JS = (
    "<script>function filterSuite(s){document.getElementById('suite-filter').value=s;"
    "for(const r of document.querySelectorAll('#matrix tbody tr'))"
    "r.classList.toggle('hidden',s!==''&&r.dataset.suite!==s)}"
    "addEventListener('DOMContentLoaded',()=>{const m=location.hash.match(/^#suite=(.+)$/);"
    "if(m)filterSuite(decodeURIComponent(m[1]))})</script>"
)
# a check's line: up is good, down is bad
LINE_Y: dict[str, int] = {**{o: 8 for o in PASSES}, **{o: 32 for o in PROBLEMS}}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:100] or "x"


@dataclass(slots=True)
class EngineSite:
    """One engine's history as the site draws it."""

    engine: Engine
    entries: list[Entry]
    merged: SessionResults | None = None
    history: History | None = None
    # judged releases and their merged target ids
    columns: list[tuple[Entry, str]] = field(default_factory=list)
    runs: dict[str, SessionResults] = field(default_factory=dict)
    drafts: list[Draft] = field(default_factory=list)
    open: list[Draft] = field(default_factory=list)

    @classmethod
    def load(cls, engine: Engine, store: Store) -> EngineSite:
        site = cls(engine, store.entries())
        parts = store.parts()
        site.runs = dict(parts)
        if not parts:
            return site
        site.merged, site.history = build_history(parts, in_given_order=True)
        by_label = {e.label: e for e in site.entries if e.judged}
        for runs in site.history.versions.values():
            site.columns += [(by_label[v.version], v.target) for v in runs if v.version in by_label]
        versions = {e.label: e.version for e in site.entries if e.judged}
        site.drafts = drafts(engine, site.history.steps, versions, site.runs)
        still = {(subject, versions.get(label, label)) for subject, label in _open(site.history)}
        site.open = [d for d in site.drafts if (d.subject, d.after) in still]
        return site

    def matrix(self) -> dict[str, dict[str, CheckCell]]:
        return check_matrix(self.merged) if self.merged is not None else {}


def _open(history: History) -> set[tuple[str, str]]:
    """``(subject, release)`` of each regression that no later step fixed: its last event along the
    line.
    """
    return {
        (subject, events[-1][0])
        for (_, _, subject), events in history.events().items()
        if events[-1][1].kind == "regression"
    }


def _nav(depth: int) -> str:
    up = "../" * depth
    return (
        f'{SITE_STYLE}<nav><a href="{up}index.html">engines</a><a '
        f'href="{up}regressions.html">open regressions'
        f"</a></nav>"
    )


def _line(cells: list[tuple[str, str]]) -> str:
    """A check's outcome per release as an SVG line (up: passed, down: failed, middle: judged
    nothing).
    """
    step, width = 60, 60 * max(len(cells), 1) + 20
    points = [
        (20 + i * step, LINE_Y.get(outcome, 20), outcome, label)
        for i, (label, outcome) in enumerate(cells)
    ]
    path = " ".join(f"{x},{y}" for x, y, _, _ in points)
    dots = "".join(
        f'<circle cx="{x}" cy="{y}" r="5" '
        f'fill="{"#2e7d32" if o in PASSES else "#c62828" if y == 32 else "#90a4ae"}">'
        f"<title>{_e(label)}: {_e(o)}</title></circle>"
        f'<text x="{x}" y="52" font-size="9" text-anchor="middle">{_e(label)}</text>'
        for x, y, o, label in points
    )
    return (
        f'<svg class="line" width="{width}" height="58" xmlns="http://www.w3.org/2000/svg">'
        f'<polyline points="{path}" fill="none" stroke="#555"/>{dots}</svg>'
    )


def _finding_row(f: Finding) -> str:
    return (
        f'<tr><td class="{FINDING_CSS.get(f.kind, "")}">'
        f"{_e(f.kind)}</td><td>{_e(f.area)}</td><td>{_e(f.subject)}</td><td>{_e(f.before)}</td><td>{_e(f.after)}</td>"
        f"<td>{_e(f.detail)}</td><td><code>{_e(f.reproducer)}</code></td></tr>"
    )


def engine_pages(site: EngineSite, out: Path) -> None:
    e = site.engine
    folder = out / e.name
    matrix = site.matrix()
    columns = site.columns
    failed = [x for x in site.entries if not x.judged]
    suites = sorted(
        {t.suite or "" for cells in matrix.values() for c in cells.values() for t in c.tests} - {""}
    )
    rows = []
    for check, cells in matrix.items():
        suite = next((t.suite for c in cells.values() for t in c.tests if t.suite), "") or ""
        tds = []
        for entry, tid in columns:
            cell = cells.get(tid)
            if cell is None:
                tds.append(f'<td class="{Outcome.NOT_RUN.value}">-</td>')
                continue
            text = _e(cell.symbol)
            if cell.outcome not in PASSES:
                text = f'<a href="checks/{slug(check)}.html#r-{slug(entry.version)}">{text}</a>'
            tds.append(
                f'<td class="{_e(cell.outcome)}" '
                f'title="{_e((cell.message or cell.evidence)[:300])}">{text}</td>'
            )
        rows.append(
            f'<tr data-suite="{_e(suite)}"><td><a '
            f'href="checks/{slug(check)}.html">{_e(check)}</a></td>'
            f"<td>{_e(suite)}</td>{''.join(tds)}</tr>"
        )
    select = (
        '<p><label>suite: <select id="suite-filter" onchange="filterSuite(this.value)"><option '
        'value="">all</option>'
        + "".join(f'<option value="{_e(s)}">{_e(s)}</option>' for s in suites)
        + "</select></label></p>"
    )
    header = [
        "check",
        "suite",
        *(f"{x.version}" + (f" ({x.label})" if x.label != x.version else "") for x, _ in columns),
    ]
    body = (
        _nav(1)
        + FILTER_JS
        + f'<p>{len(columns)} releases judged; <a href="releases.html">what changed, release by '
        "release</a>.</p>"
        + (select + _table(header, rows, "matrix") if rows else "<p>No release judged yet.</p>")
    )
    if failed:
        body += "<h2>Releases not judged</h2>" + "".join(
            f"<h3>{_e(x.version)}: {_e(x.state)}</h3><pre>{_e(x.log_tail)}</pre>" for x in failed
        )
    atomic_write_text(folder / "index.html", page(f"{e.name}: releases x checks", body))
    atomic_write_text(
        folder / "releases.html", page(f"{e.name}: release by release", _nav(1) + _releases(site))
    )
    for check, cells in matrix.items():
        line = [
            (x.label or x.version, cells[tid].outcome if tid in cells else "not run")
            for x, tid in columns
        ]
        parts = []
        for entry, tid in columns:
            cell = cells.get(tid)
            if cell is None:
                continue
            parts.append(
                f'<h3 id="r-{slug(entry.version)}">{_e(entry.version)}: <span '
                f'class="{_e(cell.outcome)}">'
                f"{_e(cell.outcome)}</span></h3>"
                + (f"<pre>{_e(cell.message)}</pre>" if cell.message else "")
                + (f"<p>What it judged: {_e(cell.evidence)}</p>" if cell.evidence else "")
                + (f"<p>Reproducer:</p><pre>{_e(cell.reproducer)}</pre>" if cell.reproducer else "")
            )
        atomic_write_text(
            folder / "checks" / f"{slug(check)}.html",
            page(
                f"{e.name}: {check}",
                _nav(2) + f"<h2>Across releases</h2>{_line(line)}" + "".join(parts),
            ),
        )


def _releases(site: EngineSite) -> str:
    if site.history is None:
        return "<p>No release judged yet.</p>"
    by_label = {x.label: x.version for x in site.entries if x.judged}
    out = ""
    for step in reversed(site.history.steps):
        before, after = by_label.get(step.before, step.before), by_label.get(step.after, step.after)
        rows = [_finding_row(f) for f in step.findings]
        out += (
            f'<h2 id="r-{slug(after)}">{_e(after)} since {_e(before)}: '
            f"{_e(step.result.verdict)}</h2>"
        )
        # the gate's own warning on the two runs (a history merges them, so its steps cannot see
        # it): two releases run by different suite code may differ by the suites, not the server
        warnings = (
            code_warnings(site.runs[before], site.runs[after])
            if {before, after} <= site.runs.keys()
            else []
        )
        out += "".join(f'<p class="warning">{_e(w)}</p>' for w in warnings) + (
            _table(
                ["what", "area", "subject", "before", "after", "detail", "reproducer"],
                rows,
                f"step-{slug(after)}",
            )
            if rows
            else "<p>No change.</p>"
        )
    return out


def _legacy(root: Path) -> list[Path]:
    """Histories stored before this service, as Markdown only (no runs to draw again): shown as they
    are.
    """
    return sorted(p for p in root.rglob("summary.md"))


def render_site(root: Path, out: Path) -> list[EngineSite]:
    """Every engine's history under ``root`` (a folder per engine with a ``history.json``) into
    ``out``.
    """
    sites = [
        EngineSite.load(ENGINES[p.parent.name], Store(root, p.parent.name))
        for p in sorted(Path(root).glob(f"*/{INDEX}"))
        if p.parent.name in ENGINES
    ]
    for site in sites:
        engine_pages(site, out)
    # the gate's verdict as it stands today, drawn from the stored runs (an entry's verdict is the
    # one it got then)
    cards = "".join(
        f'<div class="card"><h2><a href="{s.engine.name}/index.html">{_e(s.engine.name)}</a></h2>'
        f"<p>{sum(x.judged for x in s.entries)} releases judged"
        f" ({_e(', '.join(x.version for x in s.entries if x.judged))})"
        f"; {sum(not x.judged for x in s.entries)} not judged</p>"
        f'<p class="{"fail" if s.open else "pass"} verdict">{len(s.open)} open regression'
        f"{'' if len(s.open) == 1 else 's'}</p>"
        + (
            f"<p>latest step: {_e(s.history.steps[-1].after)}: "
            f"{_e(s.history.steps[-1].result.verdict)}</p>"
            if s.history is not None and s.history.steps
            else ""
        )
        + "</div>"
        for s in sites
    )
    legacy = _legacy(Path(root))
    body = (
        _nav(0)
        + "<p>Every release of each engine, judged by pytest-infer's suites on the built-in model "
        "as it shipped, and "
        "gated against the release before it.</p>"
        + f'<div class="cards" id="engines">{cards or "<p>No stored history.</p>"}</div>'
    )
    if legacy:
        body += "<h2>Stored summaries (Markdown, before this service)</h2>" + "".join(
            f"<details><summary>{_e(p.relative_to(root))}</summary><pre>{_e(p.read_text())}</pre></details>"
            for p in legacy
        )
    atomic_write_text(out / "index.html", page("pytest-infer vendor regression tracking", body))
    drafts_all = [d for s in sites for d in s.open]
    reports = out / "reports"
    for d in drafts_all:
        atomic_write_text(reports / f"{d.slug}.md", d.markdown)
    atomic_write_text(
        out / "regressions.html",
        page(
            "Open regressions",
            _nav(0)
            + "".join(
                f'<h2 id="{_e(d.slug)}">{_e(d.engine)}: {_e(d.title)}</h2><p><a '
                f'href="reports/{_e(d.slug)}.md">the drafted '
                f"report as Markdown</a></p><pre>{_e(d.markdown)}</pre>"
                for d in drafts_all
            )
            or "<p>None open.</p>",
        ),
    )
    atomic_write_text(
        out / "site.json",
        json.dumps({s.engine.name: [x.version for x in s.entries] for s in sites}),
    )
    return sites
