"""The views of a ``SessionResults`` that every renderer and the gate share, built once per rendering.

The check matrix is the core's own (every test, one row per registered check);
each suite's table adds its sections. Missing or partial parts are tolerated, so
a report never fails because one suite did not run.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..suite import Cell, Section
from .model import SessionResults, TargetRecord, TestRecord

# Worst first: what a row shows when one check ran several times against one target.
OUTCOME_SEVERITY = ("error", "not_run", "failed", "fixed", "unsupported", "xfail", "not_exercised", "skipped", "passed")
SYMBOLS = {"passed": "pass", "failed": "FAIL", "unsupported": "unsup", "xfail": "xfail", "fixed": "FIXED", "error": "ERROR", "not_run": "n/run", "not_exercised": "n/ex", "skipped": "skip"}


def target_label(target: TargetRecord) -> str:
    """The column heading of a target: framework and version (the id when the version is unknown)."""
    if target.version:
        return f"{target.framework} {target.version}"
    return target.id


def row_key(test: TestRecord) -> str:
    """The matrix row of a test: its registered check, else its node id without the target parameter."""
    if test.check:
        return test.check
    path, _, params = test.nodeid.partition("[")
    name = path.split("::", 1)[-1] if "::" in path else path
    if not params:
        return name
    parts = [p for p in params.rstrip("]").replace(test.target, "\0").split("-") if p and p != "\0"]
    rest = "-".join(parts).replace("\0", "")
    return f"{name}[{rest}]" if rest else name


def worst(outcomes: list[str]) -> str:
    rank = {o: i for i, o in enumerate(OUTCOME_SEVERITY)}
    return min(outcomes, key=lambda o: rank.get(o, -1))


@dataclass(slots=True)
class CheckCell:
    outcome: str
    tests: list[TestRecord]

    @property
    def message(self) -> str:
        return next((t.message for t in self.tests if t.outcome == self.outcome and t.message), "")

    @property
    def reproducer(self) -> str:
        return next((t.reproducer for t in self.tests if t.reproducer), "")

    @property
    def symbol(self) -> str:
        """A cell failed only by checks of severity 'warning' (deviations clients tolerate) reads FAIL(w)."""
        failed = [t for t in self.tests if t.outcome == "failed"]
        if self.outcome == "failed" and failed and all(t.extra.get("severity") == "warning" for t in failed):
            return "FAIL(w)"
        return SYMBOLS.get(self.outcome, self.outcome)


def check_matrix(results: SessionResults) -> dict[str, dict[str, CheckCell]]:
    """``{row: {target_id: CheckCell}}`` in first-seen order; a cell holds the worst outcome of its tests."""
    grouped: dict[str, dict[str, list[TestRecord]]] = {}
    for test in results.tests:
        grouped.setdefault(row_key(test), {}).setdefault(test.target, []).append(test)
    return {
        row: {tid: CheckCell(worst([t.outcome for t in tests]), tests) for tid, tests in cells.items()}
        for row, cells in grouped.items()
    }


def checks_section(matrix: dict[str, dict[str, CheckCell]]) -> Section:
    rows = {row: {t: Cell(c.symbol, c.outcome, c.message) for t, c in cells.items()} for row, cells in matrix.items()}
    return Section("Checks", "check", rows)


@dataclass(slots=True)
class Views:
    """What every renderer draws: the columns, the check matrix, and every section, checks first."""

    results: SessionResults
    ids: list[str]
    labels: list[str]
    checks: dict[str, dict[str, CheckCell]]
    sections: list[Section] = field(default_factory=list)
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)  # target -> how many of its tests had each outcome

    def label(self, target: str) -> str:
        return self.labels[self.ids.index(target)] if target in self.ids else target

    def outcome_counts(self, target: str) -> str:
        """``171 passed, 36 failed, 1 not exercised``: every outcome a target's tests had, worst first, so what
        judged nothing is counted beside what passed."""
        counts = self.outcomes.get(target, Counter())
        order = [*OUTCOME_SEVERITY, *sorted(set(counts) - set(OUTCOME_SEVERITY))]
        return ", ".join(f"{counts[o]} {o.replace('_', ' ')}" for o in order if counts[o])

    @property
    def suite_sections(self) -> list[Section]:
        return self.sections[1:]


def build_views(results: SessionResults) -> Views:
    ids = list(results.targets)
    labels = [target_label(results.targets[t]) for t in ids]
    if len(set(labels)) < len(labels):
        labels = ids
    checks = check_matrix(results)
    sections = [checks_section(checks)]
    order = list(results.suites)  # registration order, whatever order the tables were filled in
    for name, table in sorted(results.tables.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)):
        for section in table.sections():
            section.suite = name
            sections.append(section)
    outcomes: dict[str, Counter[str]] = {}
    for test in results.tests:
        outcomes.setdefault(test.target, Counter())[test.outcome] += 1
    return Views(results, ids, labels, checks, sections, outcomes)


_VERSION_PART = re.compile(r"(\d+)|([^\d.+-]+)")


def version_key(version: str | None) -> tuple:
    """Sort key for version strings: numbers numerically (0.10 after 0.9), unknown versions first."""
    if not version:
        return ((-1,),)
    return tuple((int(n), "") if n else (-1, s) for n, s in _VERSION_PART.findall(version))
