"""The terminal summary: the verdict and the findings first, then targets and every section (checks,
then each suite's), one column per framework version.

The single renderer of the terminal table; the gate's full list is printed
after it (``render_gate``), as pytest-benchmark prints its regressions after
its table.
"""

from __future__ import annotations

from ..gating.compare import gate_of
from ..outcomes import Outcome
from ..results.model import SessionResults
from ..results.views import Views, build_views
from ..table import Section

MAX_ROW = 60
# The verdict's columns: (outcome, heading), every outcome in its order, then measurements that
# judged nothing.
VERDICT_COLUMNS = (*((o.value, o.label) for o in Outcome), ("invalid", "invalid measurement"))


def verdict_counts(counts) -> str:
    """``45 pass, 8 unsup, 1 not exercised``: the verdict's counts of one target's suite, zero
    counts left out.
    """
    return (
        ", ".join(f"{counts[o]} {h}" for o, h in VERDICT_COLUMNS if counts.get(o))
        or "no tests recorded"
    )


def gate_headline(gate) -> list[str]:
    """The gate's verdict and its regressions, one line each: what the verdict block of every
    rendering opens with.
    """
    if gate is None:
        return []
    return [
        f"upgrade gate: {gate.verdict}",
        *(f"  regression: {f.line()}" for f in gate.of("regression")),
    ]


def _table(title: str, columns: list[str], rows: dict[str, list[str]]) -> list[str]:
    if not rows:
        return []
    names = {r: r if len(r) <= MAX_ROW else r[: MAX_ROW - 1] + "~" for r in rows}
    first = max(len(title), *(len(n) for n in names.values())) + 2
    widths = [
        max(len(c), *(len(cells[i]) for cells in rows.values())) + 2 for i, c in enumerate(columns)
    ]
    lines = ["".join([title.ljust(first), *(c.ljust(w) for c, w in zip(columns, widths))]).rstrip()]
    for row, cells in rows.items():
        lines.append(
            "".join(
                [names[row].ljust(first), *(v.ljust(w) for v, w in zip(cells, widths))]
            ).rstrip()
        )
    return lines


def target_state(target) -> str:
    """How a target's server fared: ready (how fast), failed to start, cannot be reached, died and
    started again.
    """
    if target.error:
        return ("FAILED TO START: " if target.launched else "") + target.error.splitlines()[0]
    state = f"ready in {target.start_seconds}s" if target.start_seconds else "endpoint"
    if target.crashes:
        again = sum(crash.restarted for crash in target.crashes)
        state += f"; DIED {len(target.crashes)}x, started again {again}x"
    return state


def section_lines(section: Section, views: Views) -> list[str]:
    rows = {
        row: [cells[t].text if t in cells else "-" for t in views.ids]
        for row, cells in section.rows.items()
    }
    return _table(section.heading, views.labels, rows)


def verdict_lines(views: Views, gate=None) -> list[str]:
    """The answer first: per target, the counts of each suite, then the gate's verdict with its
    regressions.
    """
    lines = []
    for target in views.ids:
        parts = [
            f"{suite} {verdict_counts(counts)}"
            for t, suite, counts in views.verdict_rows()
            if t == target
        ]
        lines.append(f"{views.label(target)}: " + "; ".join(parts))
    return lines + gate_headline(gate)


def finding_lines(views: Views) -> list[str]:
    """Each root cause once, worst first, with where it showed up and its upstream reference."""
    if not views.problems:
        return []
    failed = sum(len(p.tests) for p in views.problems)
    lines = [f"findings: {len(views.problems)} root causes of {failed} failed tests"]
    for p in views.problems:
        ref = f" [{p.cause.reference}]" if p.cause.reference else ""
        lines.append(f"  [{p.cause.severity}] {p.cause.title[:160]}{ref}")
        lines.append(f"      {len(p.places)} place{'s' if len(p.places) > 1 else ''}: {p.where()}")
    return lines


def render_summary(results: SessionResults, views: Views | None = None, gate=None) -> list[str]:
    """The verdict (the gate's, if ``gate`` is given or the results hold one), the findings, then
    every table.
    """
    views = views or build_views(results)
    gate = gate if gate is not None else gate_of(results)
    lines = [*verdict_lines(views, gate), *finding_lines(views), ""]
    for t in results.targets.values():
        counts = views.outcome_counts(t.id)
        lines.append(
            f"{t.id}: {t.framework} {t.version or 'unknown'} model={t.model} ({target_state(t)})"
            + (f": {counts}" if counts else "")
        )
    for i, section in enumerate(s for s in views.sections if s.rows):
        lines += ([""] if i else []) + section_lines(section, views)
    return lines


def render_gate(gate) -> list[str]:
    """The gate's verdict and its findings, regressions first (a ``gating.compare.GateResult``)."""
    lines = [f"upgrade gate: {gate.verdict}"]
    if gate.pairs:
        lines.append(
            "compared: "
            + ", ".join(gate.pair_labels or [f"{b} -> {c}" for b, c in gate.pairs])
            + (f"; rules: {', '.join(gate.rules)}" if gate.rules else "")
        )
    if gate.unpaired:
        lines.append("not compared: " + ", ".join(gate.unpaired))
    lines += [f"timing: {t}" for t in gate.timing]
    lines += [f"warning: {w}" for w in gate.warnings]
    for kind, title in (
        ("regression", "REGRESSIONS"),
        ("missing", "MISSING: judged by the baseline, not by the candidate"),
        ("improvement", "improvements"),
        ("noise", "within noise (not gating)"),
        ("change", "other changes"),
    ):
        found = gate.of(kind)
        if found:
            lines.append(f"{title} ({len(found)}):")
            lines += [f"  {f.line()}" for f in found]
    return lines


def render_written(written) -> list[str]:
    """Where the reports went (a ``reporting.outputs.Written``)."""
    lines = [f"{kind}: {path}" for kind, path in written.paths.items()]
    if written.plot_error:
        lines.append(f"html report not written: {written.plot_error}")
    return lines
