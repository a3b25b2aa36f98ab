"""The SLO suite's results: one entry per measured load point run, read back as ``SloPoint``s.

Entries are plain JSON (``profiles.evaluate.PointResult.record``); entries that
repeat a (target, profile, load point) are runs of one point, so separate CI jobs
merge into repeated runs.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..metrics.catalogue import find, headline, resolve
from ..suite import Cell, Finding, Pairing, Section, Table

RESERVED = frozenset({"interleaved", "target", "profile", "load_point", "name", "point", "concurrency", "rate", "verdict", "passed",
                      "metrics", "samples", "runs", "thresholds", "failures", "message", "error", "extra"})


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
    interleaved: str = ""  # id of the measurement that ran this point on several targets in turns, run i beside run i

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
    metrics = entry.get("metrics")
    source = metrics if isinstance(metrics, dict) else {k: v for k, v in entry.items() if k not in RESERVED}
    return {k: n for k, v in source.items() if (n := _number(v)) is not None}


def slo_points(entries: list[Any]) -> list[SloPoint]:
    """One point per (target, profile, load point); entries that repeat a point are runs of it. Junk is skipped."""
    points: dict[tuple[str, str | None, str], SloPoint] = {}
    for entry in entries:
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
        if isinstance(entry.get("interleaved"), dict):
            point.interleaved = str(entry["interleaved"].get("id", ""))
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


VERDICT_CSS = {"pass": "passed", "fail": "failed", "invalid": "error"}


class SloTable(Table):
    """The recorded load-point entries, in the order they were measured."""

    def __init__(self, entries: list[Any] | None = None) -> None:
        self.entries = entries if entries is not None else []
        self._points: list[SloPoint] | None = None

    def add(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        self._points = None

    def points(self) -> list[SloPoint]:
        if self._points is None:
            self._points = slo_points(self.entries)
        return self._points

    def to_json(self) -> Any:
        return self.entries

    @classmethod
    def from_json(cls, data: Any) -> SloTable:
        if not isinstance(data, list):
            raise ValueError(f"the slo table is a {type(data).__name__}, not a list")
        return cls(list(data))

    def merge(self, other: Table) -> None:
        self.entries.extend(other.to_json())
        self._points = None

    def rekey(self, old: str, new: str) -> None:
        for entry in self.entries:
            if isinstance(entry, dict) and entry.get("target") == old:
                entry["target"] = new
        self._points = None

    def sections(self) -> list[Section]:
        section = Section("SLO load points", "load point")
        for point in self.points():
            for metric, value in headline(point.metrics).items():
                row = f"{point.key} {metric}"
                section.rows.setdefault(row, {})[point.target] = Cell(f"{value:.4g}", value=value)
                section.trends[row] = (metric, point.key)
            verdict = point.verdict or "?"
            section.rows.setdefault(f"{point.key} verdict", {})[point.target] = Cell(verdict, VERDICT_CSS.get(verdict, ""), "; ".join(point.failures))
        return [section] if section.rows else []

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        before = {p.key: p for p in baseline.points() if p.target == pairing.baseline} if isinstance(baseline, SloTable) else {}
        after = {p.key: p for p in self.points() if p.target == pairing.candidate}
        found = []
        for key in [k for k in before if k in after]:
            old, new = before[key], after[key]
            if "invalid" in (old.verdict, new.verdict):  # a saturated client measured itself: nothing to compare
                found.append(Finding("change", "slo", pairing.label, key, old.verdict, new.verdict, "measurement invalid: figures not compared"))
                continue
            for metric in [m for m in old.metrics if m in new.metrics]:
                finding = _compare_metric(old, new, metric, pairing)
                if finding is not None:
                    found.append(finding)
        return found

    def figures(self, label: Callable[[str], str]) -> list[tuple[str, str | None]]:
        from ..reporting import plots

        points = self.points()
        series = [(f"{label(p.target)} {p.name}", k, sorted(p.samples[k])) for p in points
                  if (k := next((k for k in p.samples if (f := resolve(k)) and f.metric.name == "ttft" and p.samples[k]), None))]
        return [
            ("TTFT CDF per framework version", plots.cdf(series, "TTFT, cumulative distribution") if series else None),
            ("Output throughput against concurrency", _against_concurrency(points, label, ("output_tokens_per_s",), "output throughput v concurrency")),
            ("TTFT against concurrency", _against_concurrency(points, label, ("ttft_p50", "ttft_p99", "ttft_mean"), "TTFT v concurrency")),
        ]

    def benchmarks(self) -> list[dict[str, Any]]:
        return [
            {"group": f"{p.key} {metric}", "key": p.key, "target": p.target, "metric": metric, "value": p.metrics[metric], "runs": runs, "verdict": p.verdict}
            for p in self.points() for metric, runs in p.runs.items()
        ]


def _compare_metric(old: SloPoint, new: SloPoint, metric: str, pairing: Pairing) -> Finding | None:
    from ..gating.rules import rule_for
    from ..gating.stats import significance
    from ..metrics.catalogue import higher_is_better

    rule = rule_for(pairing.rules, metric)
    if rule is None:
        return None
    x, y = old.metrics[metric], new.metrics[metric]
    worse = rule.worsening(metric, x, y)
    unit = "%" if rule.relative else ""
    subject = f"{old.key}: {metric}"
    if abs(worse) <= rule.threshold:
        return None
    paired = bool(old.interleaved) and old.interleaved == new.interleaved
    better, worse_side = (old, new) if worse > 0 else (new, old)  # the test asks: is worse_side worse than better?
    sig = significance(metric, better.runs.get(metric, []), worse_side.runs.get(metric, []), better.samples, worse_side.samples,
                       higher_is_better=higher_is_better(metric), paired=paired)
    p = f", p={sig.p_value:.3g}" if sig.p_value is not None else ""
    moved = f"{worse:+.1f}{unit} worse" if worse > 0 else f"{-worse:.1f}{unit} better"
    detail = f"{moved}, limit {rule.describe()}; {sig.basis}{p}"
    if not sig.significant(pairing.alpha):
        return Finding("noise", "slo", pairing.label, subject, f"{x:.4g}", f"{y:.4g}", f"{detail} >= {pairing.alpha}: not significant")
    return Finding("regression" if worse > 0 else "improvement", "slo", pairing.label, subject, f"{x:.4g}", f"{y:.4g}", detail)


def _against_concurrency(points: list[SloPoint], label: Callable[[str], str], names: tuple[str, ...], title: str) -> str | None:
    """A figure against concurrency (closed-loop load points), one line per target."""
    from ..reporting import plots

    series: dict[str, list[tuple[float, float]]] = {}
    ylabel = ""
    for point in points:
        found = find(point.metrics, *names)
        if point.concurrency is None or found is None:
            continue
        ylabel = found[0]
        series.setdefault(label(point.target), []).append((point.concurrency, found[1]))
    return plots.lines(series, "concurrent streams", ylabel, title) if series else None
