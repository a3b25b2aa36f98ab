"""The terminal summary: targets, then one row per check or test, one column per target."""
from __future__ import annotations

from ..results.model import SessionResults

SYMBOLS = {"passed": "pass", "failed": "FAIL", "unsupported": "unsup", "xfail": "xfail", "fixed": "FIXED", "error": "ERROR", "skipped": "skip"}


def render_summary(results: SessionResults) -> list[str]:
    lines = []
    for target in results.targets.values():
        state = f"FAILED TO START: {target.error.splitlines()[0]}" if target.error else f"ready in {target.start_seconds}s" if target.start_seconds else "endpoint"
        lines.append(f"{target.id}: {target.framework} {target.version or 'unknown'} model={target.model} ({state})")
    columns = list(results.targets)
    rows: dict[str, dict[str, str]] = {}
    for test in results.tests:
        row = test.check or test.nodeid.split("[")[0].split("::")[-1]
        rows.setdefault(row, {})[test.target] = SYMBOLS.get(test.outcome, test.outcome)
    if rows and columns:
        width = max(len(r) for r in rows) + 2
        lines.append("".join(["check".ljust(width), *(c[:14].ljust(16) for c in columns)]))
        for row, cells in rows.items():
            lines.append("".join([row.ljust(width), *(cells.get(c, "-").ljust(16) for c in columns)]))
    return lines
