"""Read-only views of a ``SessionResults`` that every renderer and the gate share.

The suites fill ``tests``, ``structured`` and ``slo`` independently; these
views give them one shape (a check matrix, a keyword status per target, SLO
load points) and tolerate missing or partial sections, so that a report never
fails because one suite did not run.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from .model import SessionResults, TargetRecord, TestRecord

# Worst first: what a row shows when one check ran several times against one target.
OUTCOME_SEVERITY = ("error", "not_run", "failed", "fixed", "unsupported", "xfail", "skipped", "passed")
# Structured-output outcome classes (docs: structured-output), worst first.
KEYWORD_CLASSES = ("invalid", "error", "truncated", "rejected", "valid")
SLO_RESERVED = frozenset({"target", "profile", "load_point", "name", "point", "concurrency", "rate", "verdict", "passed",
                          "metrics", "samples", "runs", "thresholds", "failures", "message", "error", "extra"})


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
class Cell:
    outcome: str
    tests: list[TestRecord]

    @property
    def message(self) -> str:
        return next((t.message for t in self.tests if t.outcome == self.outcome and t.message), "")

    @property
    def reproducer(self) -> str:
        return next((t.reproducer for t in self.tests if t.reproducer), "")


def check_matrix(results: SessionResults) -> dict[str, dict[str, Cell]]:
    """``{row: {target_id: Cell}}`` in first-seen order; a cell holds the worst outcome of its tests."""
    grouped: dict[str, dict[str, list[TestRecord]]] = {}
    for test in results.tests:
        grouped.setdefault(row_key(test), {}).setdefault(test.target, []).append(test)
    return {
        row: {tid: Cell(worst([t.outcome for t in tests]), tests) for tid, tests in cells.items()}
        for row, cells in grouped.items()
    }


def keyword_status(counts: dict[str, int]) -> str:
    """One word per keyword: the worst outcome class with a non-zero count (``none`` if nothing ran)."""
    for klass in KEYWORD_CLASSES:
        if counts.get(klass, 0) > 0:
            return klass
    other = [k for k, n in counts.items() if n > 0]
    return sorted(other)[0] if other else "none"


def keyword_matrix(results: SessionResults) -> dict[str, dict[str, dict[str, int]]]:
    """``{keyword: {target_id: {class: count}}}`` (the stored table is keyed by target first)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for tid, rows in results.structured.items():
        for keyword, counts in rows.items():
            out.setdefault(keyword, {})[tid] = dict(counts)
    return dict(sorted(out.items()))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(slots=True)
class SloPoint:
    """One load point of one target: its figures, verdict and, where recorded, repeated runs and samples."""

    target: str
    name: str
    profile: str | None = None
    concurrency: float | None = None
    rate: float | None = None
    verdict: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    runs: dict[str, list[float]] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    aggregate: dict[str, float] = field(default_factory=dict)  # an entry's own figures, for those its runs lack

    @property
    def key(self) -> str:
        return f"{self.profile or '-'}/{self.name}"


def _verdict(entry: dict[str, Any]) -> str | None:
    verdict = entry.get("verdict")
    if isinstance(verdict, str):
        return verdict
    if isinstance(entry.get("passed"), bool):
        return "pass" if entry["passed"] else "fail"
    return None


def _metrics_of(entry: dict[str, Any]) -> dict[str, float]:
    source = entry.get("metrics") if isinstance(entry.get("metrics"), dict) else {
        k: v for k, v in entry.items() if k not in SLO_RESERVED
    }
    return {k: n for k, v in source.items() if (n := _number(v)) is not None}


def slo_points(results: SessionResults) -> list[SloPoint]:
    """The SLO entries, one point per (target, profile, load point). Entries that repeat a point are runs of it."""
    points: dict[tuple[str, str | None, str], SloPoint] = {}
    for entry in results.slo:
        if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
            continue
        concurrency, rate = _number(entry.get("concurrency")), _number(entry.get("rate"))
        name = entry.get("load_point") or entry.get("name") or entry.get("point")
        if not name:
            name = f"c={concurrency:g}" if concurrency is not None else f"rate={rate:g}" if rate is not None else "default"
        key = (entry["target"], entry.get("profile"), str(name))
        point = points.get(key)
        metrics = _metrics_of(entry)
        if point is None:
            point = points[key] = SloPoint(entry["target"], str(name), entry.get("profile"), concurrency, rate, _verdict(entry))
        elif _verdict(entry) not in (None, "pass"):
            point.verdict = _verdict(entry)
        point.aggregate.update(metrics)
        for run in entry.get("runs") or [metrics]:
            for metric, value in (_metrics_of(run) if isinstance(run, dict) else {}).items():
                point.runs.setdefault(metric, []).append(value)
        for metric, values in (entry.get("samples") or {}).items():
            if isinstance(values, list):
                point.samples.setdefault(metric, []).extend(v for v in map(_number, values) if v is not None)
        failures = entry.get("failures")
        if isinstance(failures, list):
            point.failures += [str(f) for f in failures]
    for point in points.values():
        point.metrics = {**point.aggregate, **{m: statistics.median(vs) for m, vs in point.runs.items()}}
    return list(points.values())


_VERSION_PART = re.compile(r"(\d+)|([^\d.+-]+)")


def version_key(version: str | None) -> tuple:
    """Sort key for version strings: numbers numerically (0.10 after 0.9), unknown versions first."""
    if not version:
        return ((-1,),)
    return tuple((int(n), "") if n else (-1, s) for n, s in _VERSION_PART.findall(version))
