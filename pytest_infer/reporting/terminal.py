"""The terminal summary: targets, then one row per check, keyword and load point, one column per framework version.

The single renderer of the terminal table; the gate's list of regressions is
printed after it (``render_gate``), as pytest-benchmark prints its regressions
after its table.
"""
from __future__ import annotations

from ..results.model import SessionResults
from ..results.views import check_matrix, keyword_matrix, keyword_status, slo_points, target_label

SYMBOLS = {"passed": "pass", "failed": "FAIL", "unsupported": "unsup", "xfail": "xfail", "fixed": "FIXED", "error": "ERROR", "not_run": "n/run", "skipped": "skip"}
HEADLINE_METRICS = ("ttft_p50", "ttft_p99", "tpot_p99", "itl_p99", "e2e_p99", "output_tps", "output_tokens_per_s", "goodput")
MAX_ROW = 60


def _table(title: str, columns: list[str], rows: dict[str, list[str]]) -> list[str]:
    if not rows:
        return []
    names = {r: (r if len(r) <= MAX_ROW else r[: MAX_ROW - 1] + "~") for r in rows}
    first = max(len(title), *(len(n) for n in names.values())) + 2
    widths = [max(len(c), *(len(cells[i]) for cells in rows.values())) + 2 for i, c in enumerate(columns)]
    lines = ["".join([title.ljust(first), *(c.ljust(w) for c, w in zip(columns, widths))]).rstrip()]
    for row, cells in rows.items():
        lines.append("".join([names[row].ljust(first), *(v.ljust(w) for v, w in zip(cells, widths))]).rstrip())
    return lines


def headline(metrics: dict[str, float]) -> dict[str, float]:
    """The figures a summary shows: the headline ones present (by name or name + unit suffix)."""
    shown = {}
    for want in HEADLINE_METRICS:
        for name, value in metrics.items():
            if name == want or name.startswith(f"{want}_"):
                shown[name] = value
                break
    return shown


def _symbol(cell) -> str:
    """A cell failed only by checks of severity 'warning' (deviations clients tolerate) reads FAIL(w)."""
    failed = [t for t in cell.tests if t.outcome == "failed"]
    if cell.outcome == "failed" and failed and all(t.extra.get("severity") == "warning" for t in failed):
        return "FAIL(w)"
    return SYMBOLS.get(cell.outcome, cell.outcome)


def render_summary(results: SessionResults) -> list[str]:
    lines = []
    for target in results.targets.values():
        state = f"FAILED TO START: {target.error.splitlines()[0]}" if target.error else f"ready in {target.start_seconds}s" if target.start_seconds else "endpoint"
        lines.append(f"{target.id}: {target.framework} {target.version or 'unknown'} model={target.model} ({state})")
    ids = list(results.targets)
    labels = [target_label(results.targets[t]) for t in ids]
    if len(set(labels)) < len(labels):
        labels = ids
    matrix = check_matrix(results)
    rows = {row: [_symbol(cells[t]) if t in cells else "-" for t in ids] for row, cells in matrix.items()}
    lines += _table("check", labels, rows)
    keywords = keyword_matrix(results)
    if keywords:
        lines.append("")
        lines += _table("structured keyword", labels, {
            k: [keyword_status(cells[t]) if t in cells else "-" for t in ids] for k, cells in keywords.items()
        })
    points = slo_points(results)
    if points:
        lines.append("")
        slo_rows: dict[str, list[str]] = {}
        for point in points:
            for metric, value in headline(point.metrics).items():
                slo_rows.setdefault(f"{point.key} {metric}", ["-"] * len(ids))[ids.index(point.target)] = f"{value:.4g}"
            slo_rows.setdefault(f"{point.key} verdict", ["-"] * len(ids))[ids.index(point.target)] = point.verdict or "?"
        lines += _table("load point", labels, slo_rows)
    if results.robustness:  # counts per target: bad inputs tried, 4xx, 5xx, hangs, deaths, ...
        lines.append("")
        counters = list(dict.fromkeys(k for t in ids for k in results.robustness.get(t, {})))
        lines += _table("robustness", labels, {c: [str(results.robustness[t].get(c, 0)) if t in results.robustness else "-" for t in ids] for c in counters})
    return lines


def render_gate(gate) -> list[str]:
    """The gate's verdict and its findings, regressions first (a ``gating.compare.GateResult``)."""
    lines = [f"upgrade gate: {gate.verdict}"]
    if gate.pairs:
        lines.append("compared: " + ", ".join(gate.pair_labels or [f"{b} -> {c}" for b, c in gate.pairs]) + (f"; rules: {', '.join(gate.rules)}" if gate.rules else ""))
    if gate.unpaired:
        lines.append("not compared: " + ", ".join(gate.unpaired))
    lines += [f"warning: {w}" for w in gate.warnings]
    for kind, title in (("regression", "REGRESSIONS"), ("improvement", "improvements"), ("noise", "within noise (not gating)"), ("change", "other changes")):
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
