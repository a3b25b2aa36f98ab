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

from ..outcomes import Outcome
from ..reporting import plots
from ..table import UNMEASURED, Cell, Finding, Limits, Measured, Pairing, Section, Table
from . import settings as slo_settings
from .metrics.catalogue import Figure, UnknownMetric, find, headline, parse, stored, threshold
from .metrics.catalogue import metric as catalogued
from .metrics.stats import median_interval
from .rules import rule_for, worsening
from .significance import significance

RESERVED = frozenset(
    {
        "interleaved",
        "session",
        "target",
        "profile",
        "load_point",
        "name",
        "point",
        "concurrency",
        "rate",
        "verdict",
        "passed",
        "metrics",
        "samples",
        "runs",
        "slices",
        "thresholds",
        "failures",
        "message",
        "error",
        "extra",
        "server",
        "thresholds_source",
    }
)
# a profile's thresholds_source whose limits were not measured on its hardware
ESTIMATED = "estimated"
TTFT = catalogued("ttft")
# a timing move across sessions with no drift calibration: listed, not judged
NOT_GATED = "not gated"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(slots=True)
class SloPoint:
    """One load point of one target: its figures, verdict and, where recorded, repeated runs and
    samples.
    """

    target: str
    name: str
    profile: str | None = None
    concurrency: float | None = None
    rate: float | None = None
    verdict: str | None = None
    metrics: dict[Figure, float] = field(default_factory=dict)
    runs: dict[Figure, list[float]] = field(default_factory=dict)
    slices: dict[Figure, list[float]] = field(
        default_factory=dict
    )  # each slice's figure, in order, for runs measured in slices
    samples: dict[Figure, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    # an entry's own figures, for those its runs lack
    aggregate: dict[Figure, float] = field(default_factory=dict)
    # id of the measurement that ran this point on several targets in turns, run i beside run i
    interleaved: str = ""
    # the pytest sessions its entries came from; empty: not recorded
    sessions: set[str] = field(default_factory=set)
    # each entry's server-side figures (profiles.evaluate)
    server: list[dict[str, Any]] = field(default_factory=list)
    # the profile's word on its limits: "estimated", "measured", or "" where it gave none
    thresholds_source: str = ""

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


def _metrics_of(entry: dict[str, Any]) -> dict[Figure, float]:
    metrics = entry.get("metrics")
    source = (
        metrics
        if isinstance(metrics, dict)
        else {k: v for k, v in entry.items() if k not in RESERVED}
    )
    return stored({k: n for k, v in source.items() if (n := _number(v)) is not None})


def slo_points(entries: list[Any]) -> list[SloPoint]:
    """One point per (target, profile, load point); entries that repeat a point are runs of it. Junk
    is skipped.
    """
    points: dict[tuple[str, str | None, str], SloPoint] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
            continue
        concurrency, rate = _number(entry.get("concurrency")), _number(entry.get("rate"))
        name = entry.get("load_point") or entry.get("name") or entry.get("point")
        if not name:
            name = (
                f"c={concurrency:g}"
                if concurrency is not None
                else f"rate={rate:g}"
                if rate is not None
                else "default"
            )
        key = (entry["target"], entry.get("profile"), str(name))
        point = points.get(key)
        metrics = _metrics_of(entry)
        if point is None:
            point = points[key] = SloPoint(
                entry["target"], str(name), entry.get("profile"), concurrency, rate, _verdict(entry)
            )
        elif _verdict(entry) not in (None, "pass"):
            point.verdict = _verdict(entry)
        point.aggregate.update(metrics)
        if isinstance(entry.get("thresholds_source"), str):
            point.thresholds_source = entry["thresholds_source"]
        if isinstance(entry.get("interleaved"), dict):
            point.interleaved = str(entry["interleaved"].get("id", ""))
        if isinstance(entry.get("session"), str) and entry["session"]:
            point.sessions.add(entry["session"])
        runs = entry.get("runs")
        for run in (
            [_metrics_of(r) if isinstance(r, dict) else {} for r in runs] if runs else [metrics]
        ):
            for metric, value in run.items():
                point.runs.setdefault(metric, []).append(value)
        for part in entry.get("slices") or []:
            for metric, value in (_metrics_of(part) if isinstance(part, dict) else {}).items():
                point.slices.setdefault(metric, []).append(value)
        for metric, values in (entry.get("samples") or {}).items():
            if isinstance(values, list):
                point.samples.setdefault(parse(metric), []).extend(
                    v for v in map(_number, values) if v is not None
                )
        if isinstance(entry.get("server"), dict):
            point.server.append(entry["server"])
        failures = entry.get("failures")
        if isinstance(failures, list):
            point.failures += [str(f) for f in failures]
    for point in points.values():
        point.metrics = {
            **point.aggregate,
            **{m: statistics.median(vs) for m, vs in point.runs.items()},
        }
    return list(points.values())


VERDICT_CSS = {"pass": Outcome.PASSED, "fail": Outcome.FAILED, "invalid": Outcome.ERROR}
ESTIMATE_NOTE = (
    "the profile's limits are estimates, not measured on its hardware: recalibrate "
    "before gating on them"
)


class SloTable(Table, Measured):
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
            for figure, value in headline(point.metrics).items():
                row = f"{point.key} {figure}"
                section.rows.setdefault(row, {})[point.target] = Cell(f"{value:.4g}", value=value)
                section.trends[row] = (str(figure), point.key)
            for row, cell in server_cells(point):
                section.rows.setdefault(f"{point.key} {row}", {})[point.target] = cell
            verdict = point.verdict or "?"
            section.rows.setdefault(f"{point.key} verdict", {})[point.target] = Cell(
                verdict, VERDICT_CSS.get(verdict, ""), "; ".join(point.failures)
            )
            if point.thresholds_source == ESTIMATED:
                section.rows.setdefault(f"{point.key} thresholds", {})[point.target] = Cell(
                    ESTIMATED, detail=ESTIMATE_NOTE
                )
        return [section] if section.rows else []

    def limits(self) -> list[Limits]:
        """Per load point, each threshold's limit, the measured figure (over repeated runs their
        median, with its 95% interval) and the margin."""
        checks: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for (
            entry
            # the last entry of a point that judged it: repeats of a point judge the same thresholds
        ) in self.entries:
            if isinstance(entry, dict) and isinstance(entry.get("checks"), list):
                name = entry.get("load_point") or entry.get("name") or entry.get("point")
                checks[(str(entry.get("target")), f"{entry.get('profile') or '-'}/{name}")] = [
                    c for c in entry["checks"] if isinstance(c, dict)
                ]
        out = []
        for point in self.points():
            invalid = "; ".join(
                f.removeprefix("measurement invalid: ")
                for f in point.failures
                if f.startswith("measurement invalid")
            )
            rows = [_limit_row(point, check) for check in checks.get((point.target, point.key), [])]
            figures = {str(k): f"{v:.4g}" for k, v in point.metrics.items()}
            out.append(
                Limits(point.target, point.key, point.verdict or "?", rows, invalid, figures)
            )
        return out

    def unmeasured(self, target: str) -> set[str]:
        return {
            str(e.get("nodeid"))
            for e in self.entries
            if isinstance(e, dict) and e.get("target") == target and e.get("verdict") == "invalid"
        }

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        before = (
            {p.key: p for p in baseline.points() if p.target == pairing.baseline}
            if isinstance(baseline, SloTable)
            else {}
        )
        after = {p.key: p for p in self.points() if p.target == pairing.candidate}
        found = [
            Finding(
                "missing",
                "slo",
                pairing.label,
                key,
                before[key].verdict,
                "absent",
                "the candidate did not measure it",
            )
            for key in before
            # an invalid point judged nothing to miss
            if key not in after and before[key].verdict != "invalid"
        ]
        for key in [k for k in before if k in after]:
            old, new = before[key], after[key]
            # a saturated client measured itself: nothing to compare
            if "invalid" in (old.verdict, new.verdict):
                found.append(
                    Finding(
                        "missing",
                        "slo",
                        pairing.label,
                        key,
                        old.verdict,
                        new.verdict,
                        UNMEASURED,
                    )
                )
                continue
            found += [
                Finding(
                    "missing",
                    "slo",
                    pairing.label,
                    f"{key}: {m}",
                    old.metrics[m],
                    "absent",
                    "not measured",
                )
                for m in old.metrics
                if m not in new.metrics
            ]
            for metric in [m for m in old.metrics if m in new.metrics]:
                finding = _compare_metric(old, new, metric, pairing)
                if finding is not None:
                    found.append(finding)
        return found

    @classmethod
    def gate_rules(cls, settings: Any) -> list[str]:
        return [rule.describe() for rule in slo_settings.of(settings).rules]

    def verdict_note(self, findings: list[Finding]) -> str | None:
        ungated = sum(1 for f in findings if NOT_GATED in f.detail)
        moves = f"{ungated} timing move{'s' if ungated != 1 else ''}"
        return (
            f"{moves} across sessions {NOT_GATED}: no drift calibration for them"
            if ungated
            else None
        )

    @classmethod
    def history_note(cls, settings: Any) -> str | None:
        if rules := cls.gate_rules(settings):
            return (
                f"SLO figures compared under {', '.join(rules)}, each change tested for "
                "significance"
            )
        return (
            "SLO figures not compared (no --fail-on rules): runs of separate sessions differ by "
            "the machine's drift; "
            "compare runs measured in turns in one session (scripts/vendor-history.sh timing)"
        )

    def timing_mode(self, baseline: Table, pairing: Pairing) -> str | None:
        if not isinstance(baseline, SloTable):
            return None
        before = {p.key: p for p in baseline.points() if p.target == pairing.baseline}
        compared = [
            (before[p.key], p)
            for p in self.points()
            if p.target == pairing.candidate and p.key in before
        ]
        modes = dict.fromkeys(timing_mode(old, new, pairing) for old, new in compared)
        return "; ".join(modes) or None

    def session_figures(self, source: str) -> dict[str, dict[tuple[str, str, str], float]]:
        """An entry without a session id (written before they were recorded) stands for its file's
        session.
        """
        by_session: dict[str, list[Any]] = {}
        for entry in self.entries:
            if isinstance(entry, dict):
                session = entry.get("session")
                name = f"{source}#{session}" if isinstance(session, str) and session else source
                by_session.setdefault(name, []).append(entry)
        return {
            name: {
                (p.target, p.key, str(m)): v
                for p in slo_points(entries)
                if p.verdict != "invalid"
                for m, v in p.metrics.items()
            }
            for name, entries in by_session.items()
        }

    def figures(self, label: Callable[[str], str]) -> list[tuple[str, str | None]]:
        points = self.points()
        series = [
            (f"{label(p.target)} {p.name}", str(k), sorted(p.samples[k]))
            for p in points
            if (k := next((k for k in p.samples if k.metric is TTFT and p.samples[k]), None))
        ]
        return [
            (
                "TTFT CDF per framework version",
                plots.cdf(series, "TTFT, cumulative distribution") if series else None,
            ),
            (
                "Output throughput against concurrency",
                _against_concurrency(
                    points,
                    label,
                    (catalogued("output_tokens_per_s").at(),),
                    "output throughput v concurrency",
                ),
            ),
            (
                "TTFT against concurrency",
                _against_concurrency(
                    points,
                    label,
                    (TTFT.at("p50"), TTFT.at("p99"), TTFT.at("mean")),
                    "TTFT v concurrency",
                ),
            ),
        ]

    def benchmarks(self) -> list[dict[str, Any]]:
        return [
            {
                "group": f"{p.key} {metric}",
                "key": p.key,
                "target": p.target,
                "metric": str(metric),
                "value": p.metrics[metric],
                "runs": runs,
                "verdict": p.verdict,
                "seconds": [s for s in (as_seconds(metric, v) for v in runs) if s is not None],
                "stored_as": "reciprocal seconds (ops = the figure)"
                if metric.higher_is_better
                else "seconds",
            }
            for p in self.points()
            for metric, runs in p.runs.items()
        ]


def as_seconds(figure: Figure, value: float) -> float | None:
    """A figure as a pytest-benchmark time (lower is better): a throughput as its reciprocal;
    ``None`` when it cannot be one."""
    if figure.higher_is_better:
        return 1.0 / value if value > 0 else None
    return figure.seconds(value)


def _shown(value: float, unit: str) -> str:
    if unit == "share":
        return f"{value * 100:.3g}%"
    return f"{value:.4g} {unit}".strip()


def _limit_row(point: SloPoint, check: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """``(metric, limit, measured, margin, css)``: the margin is how far inside (or outside) the
    limit, as a share of it."""

    name, op = str(check.get("name")), str(check.get("op", "<="))
    limit, measured = _number(check.get("limit")), _number(check.get("measured"))
    figure: Figure | None
    try:
        figure = threshold(name).figure
        unit = figure.unit
    except UnknownMetric:
        figure, unit = None, ""
    shown_limit = f"{op} {_shown(limit, unit)}" if limit is not None else "?"
    if point.thresholds_source == ESTIMATED:
        shown_limit += f" ({ESTIMATED})"
    if check.get("unmeasured") or measured is None:
        # the judge's "not measured: <why>", naming what was missing
        note = str(check.get("note") or "")
        unmeasured = note if note.startswith("not measured") else "not measured"
        return (name, shown_limit, unmeasured, "-", Outcome.NOT_EXERCISED)
    ok = bool(check.get("ok"))
    runs = point.runs.get(figure, []) if figure else []
    # repeated runs (one job's repeats, or merged jobs): their median, as the gate does
    if len(runs) >= 2 and figure:
        measured = point.metrics.get(figure, measured)
        if limit is not None:
            ok = measured <= limit if op.startswith("<") else measured >= limit
    text = _shown(measured, unit)
    if len(runs) >= 2:
        interval = median_interval(runs)
        low, high = interval or (min(runs), max(runs))
        text += (
            f" [{_shown(low, unit)}, {_shown(high, unit)}] ({len(runs)} runs)"
            if interval
            else f" (range {_shown(low, unit)} to {_shown(high, unit)}, {len(runs)} runs)"
        )
    if limit is None:
        margin = "-"
    elif limit == 0:
        margin = (
            "at the limit"
            if measured == 0
            else f"{_shown(abs(measured), unit)} "
            f"{'past the limit' if (measured > 0) == (op == '<=') else 'headroom'}"
        )
    else:
        inside = (
            (limit - measured) / abs(limit)
            if op.startswith("<")
            else (measured - limit) / abs(limit)
        )
        # a floor cleared many times over reads better as a ratio
        if inside >= 1 and not op.startswith("<"):
            margin = f"{measured / limit:.3g}x the limit"
        else:
            margin = f"{inside:.0%} headroom" if inside >= 0 else f"{-inside:.0%} past the limit"
    return (name, shown_limit, text, margin, Outcome.PASSED if ok else Outcome.FAILED)


def server_cells(point: SloPoint) -> list[tuple[str, Cell]]:
    """The server's own figures beside the client's: counts as ``server / client``, the histogram's
    TTFT, the cross-check."""
    if not point.server:
        return []
    if any("error" in s for s in point.server):
        return [
            (
                "server metrics",
                Cell(
                    "not read", detail=next(str(s["error"]) for s in point.server if "error" in s)
                ),
            )
        ]
    cells = []
    for key, label in (("requests", "requests"), ("output_tokens", "output tokens")):
        pairs = [
            (s.get(key), (s.get("check") or {}).get("client", {}).get(key)) for s in point.server
        ]
        ints = [(a, b) for a, b in pairs if isinstance(a, int) and isinstance(b, int)]
        if len(ints) == len(pairs):
            server, client = sum(a for a, _ in ints), sum(b for _, b in ints)
            cells.append(
                (
                    f"server / client {label}",
                    Cell(f"{server} / {client}", "" if server == client else Outcome.FAILED),
                )
            )
    ttft = [
        s["ttft"]
        for s in point.server
        if isinstance(s.get("ttft"), dict) and s["ttft"].get("count")
    ]
    if ttft:
        count = sum(h["count"] for h in ttft)
        mean = sum(h["mean_ms"] * h["count"] for h in ttft) / count
        cells.append(("server ttft_mean_ms (histogram)", Cell(f"{mean:.4g}", value=mean)))
    if (hits := prefix_cache_hit_share(point)) is not None:
        cells.append(("server prefix-cache hit share", hits))
    checks = [c for s in point.server if isinstance(c := s.get("check"), dict)]
    if checks:
        problems = [p for c in checks for p in c.get("problems", [])]
        cells.append(
            (
                "server cross-check",
                Cell(
                    "disagree" if problems else "agree",
                    Outcome.FAILED if problems else Outcome.PASSED,
                    "; ".join(problems),
                ),
            )
        )
    return cells


def prefix_cache_hit_share(point: SloPoint) -> Cell | None:
    """Prompt tokens the server found in its prefix cache, as a share of those it looked up, over
    the point's runs.

    Summed from the counters rather than averaging each run's ``prefix_cache_hit_rate``, so runs
    weigh by their tokens. None where the server does not count lookups; "no lookups" where it
    counted none (prefix caching off).
    """
    counts = [
        (h, q)
        for s in point.server
        if isinstance(h := s.get("prefix_cache_hits"), int)
        and isinstance(q := s.get("prefix_cache_queries"), int)
    ]
    if not counts or len(counts) < len(point.server):
        return None
    hits, queries = sum(h for h, _ in counts), sum(q for _, q in counts)
    if not queries:
        return Cell(
            "no lookups",
            detail="the server looked up no prompt tokens in a prefix cache: prefix caching is off",
        )
    share = hits / queries
    return Cell(
        f"{share:.1%}",
        detail=f"{hits} of {queries} prompt tokens from the prefix cache",
        value=share,
    )


def measured_in_turns(old: SloPoint, new: SloPoint) -> bool:
    return bool(old.interleaved) and old.interleaved == new.interleaved


def timing_mode(old: SloPoint, new: SloPoint, pairing: Pairing) -> str:
    """Which way the gate judges this point's timing: paired (in turns), or across sessions within a
    calibrated drift, or not at all (across sessions, with no calibration to say how far the machine
    alone moves them)."""
    if measured_in_turns(old, new):
        return "interleaved (measured in turns)"
    sessions = (
        "one session, in sequence"
        if old.sessions and old.sessions == new.sessions
        else "separate sessions"
    )
    calibration = slo_settings.of(pairing.settings.get(slo_settings.NAME)).drift
    if calibration is None:
        return f"{sessions}, {NOT_GATED}: no calibration"
    return f"{sessions}, gated beyond the calibrated drift of {calibration.describe()}"


def _compare_metric(
    old: SloPoint, new: SloPoint, metric: Figure, pairing: Pairing
) -> Finding | None:

    settings = slo_settings.of(pairing.settings.get(slo_settings.NAME))
    rule = rule_for(settings.rules, metric)
    if rule is None:
        return None
    x, y = old.metrics[metric], new.metrics[metric]
    worse = rule.worsening(metric, x, y)
    unit = "%" if rule.relative else ""
    subject = f"{old.key}: {metric}"
    if abs(worse) <= rule.threshold:
        return None
    paired = measured_in_turns(old, new)
    moved = f"{worse:+.1f}{unit} worse" if worse > 0 else f"{-worse:.1f}{unit} better"
    limit = f"limit {rule.describe()}"
    # the share by which the better side is moved towards worse before the test: the calibrated
    # drift
    shift = 0.0
    # across sessions the machine's drift is in the difference: only a calibration says how much
    if not paired:
        mode = timing_mode(old, new, pairing).partition(",")[0]
        calibration = settings.drift
        drift = calibration.drift(old.key, metric) if calibration is not None else None
        if calibration is None or drift is None:
            why = (
                f"{calibration.describe()} has no drift for this figure"
                if calibration
                else "no calibration"
            )
            detail = f"{moved}, {limit}; {mode}, {NOT_GATED}: {why}"
            return Finding("change", "slo", pairing.label, subject, f"{x:.4g}", f"{y:.4g}", detail)
        relative = worsening(metric, x, y)
        limit += f" + calibrated drift {drift.bound_pct:g}% ({mode}, {calibration.describe()})"
        tolerated = rule.threshold + (drift.bound_pct if rule.relative else 0.0)
        if abs(relative) <= drift.bound_pct or abs(worse) <= tolerated:
            detail = f"{moved}, {limit}: within the rule and the drift between sessions"
            return Finding("noise", "slo", pairing.label, subject, f"{x:.4g}", f"{y:.4g}", detail)
        shift = drift.bound_pct / 100.0
    # the test asks: is worse_side worse than better?
    better, worse_side = (old, new) if worse > 0 else (new, old)
    # measured in slices, slice i of each target spans the same seconds: the slices pair closer, and
    # there are more of them
    sliced = paired and len(better.slices.get(metric, [])) == len(
        worse_side.slices.get(metric, [])
    ) > len(better.runs.get(metric, []))
    repeated = "slices" if sliced else "runs"
    up = metric.higher_is_better
    factor = 1.0 - shift if up else 1.0 + shift  # the better side, moved by the drift towards worse

    def moved_by_drift(values: list[float]) -> list[float]:
        return [v * factor for v in values] if shift else values

    better_runs = moved_by_drift(getattr(better, repeated).get(metric, []))
    better_samples = {k: moved_by_drift(v) for k, v in better.samples.items()}
    sig = significance(
        metric,
        better_runs,
        getattr(worse_side, repeated).get(metric, []),
        better_samples,
        worse_side.samples,
        higher_is_better=up,
        paired=paired,
        unit=repeated,
    )
    p = f", p={sig.p_value:.3g}" if sig.p_value is not None else ""
    basis = (
        f"{sig.basis} against the other side moved by the drift"
        if shift and sig.p_value is not None
        else sig.basis
    )
    detail = f"{moved}, {limit}; {basis}{p}"
    if not sig.significant(pairing.alpha):
        return Finding(
            "noise",
            "slo",
            pairing.label,
            subject,
            f"{x:.4g}",
            f"{y:.4g}",
            f"{detail} >= {pairing.alpha}: not significant",
        )
    return Finding(
        "regression" if worse > 0 else "improvement",
        "slo",
        pairing.label,
        subject,
        f"{x:.4g}",
        f"{y:.4g}",
        detail,
    )


def _against_concurrency(
    points: list[SloPoint], label: Callable[[str], str], figures: tuple[Figure, ...], title: str
) -> str | None:
    """A figure against concurrency (closed-loop load points), one line per target."""
    series: dict[str, list[tuple[float, float]]] = {}
    ylabel = ""
    for point in points:
        found = find(point.metrics, *figures)
        if point.concurrency is None or found is None:
            continue
        ylabel = str(found[0])
        series.setdefault(label(point.target), []).append((point.concurrency, found[1]))
    return plots.lines(series, "concurrent streams", ylabel, title) if series else None
