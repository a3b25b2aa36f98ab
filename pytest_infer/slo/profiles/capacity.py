"""Capacity at the SLO: the highest request rate (or concurrency) at which every threshold of a load
point holds.

The one number a team asks of an upgrade: how much traffic one replica takes within its SLO. A load
point with a ``search`` runs probes, each a full load point at one rate (or concurrency) judged
against the point's thresholds: it doubles from ``start`` until a probe fails (or ``max`` passes),
then bisects between the highest pass and the lowest failure until they are within ``resolution`` of
each other (a ratio for rates, one stream for concurrency) or ``max_probes`` ran. It stops climbing
early when a probe's error share exceeds ``stop_error_share``, or when the server is over-saturated:
time to first token in the last third of the window more than ``saturation_ratio`` times the first
third's, rising through the middle third: a queue that grew all run. An invalid probe (the client
could not keep up) ends the search: what it would say beyond is unknown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from ..metrics.judge import PointVerdict, ThresholdCheck
from . import CAPACITY_THRESHOLDS, LoadPoint
from .evaluate import PointResult

DEFAULTS = {"resolution": 0.25, "max_probes": 8, "stop_error_share": 0.05, "saturation_ratio": 2.0}
FIGURE = {"rate": "capacity_rps", "concurrency": "capacity_concurrency"}


@dataclass(slots=True)
class CapacityProbe:
    value: float
    status: str  # pass, fail, errors, saturated, invalid
    reason: str
    result: PointResult

    def row(self) -> dict[str, Any]:
        """The probe with the figures its thresholds judge, and the rate it achieved."""
        f = self.result.figures()
        keep = ("requests_per_s", *self.result.point.thresholds, "error_share")
        return {
            "value": self.value,
            "status": self.status,
            "reason": self.reason,
            **{k: f[k] for k in keep if k in f},
        }


@dataclass(slots=True)
class Capacity:
    over: str  # "rate" or "concurrency"
    value: float | None  # the highest value that passed; None: not even the first probe did
    ceiling: float | None  # the lowest value that failed; None: every probe up to ``max`` passed
    stopped: str  # why the search ended
    probes: list[CapacityProbe] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def figure(self) -> str:
        return FIGURE[self.over]

    @property
    def invalid(self) -> list[str]:
        return [
            f"probe at {self.over} {p.value:g}: {p.reason}"
            for p in self.probes
            if p.status == "invalid"
        ]

    def describe(self) -> str:
        if self.value is None:
            if not self.probes or self.probes[0].status == "invalid":
                return "not measured"
            return f"below {self.probes[-1].value:g} (no probe held its thresholds)"
        upper = (
            f", below {self.ceiling:g}" if self.ceiling is not None else " (the search's maximum)"
        )
        return f"{self.value:g}{upper}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "over": self.over,
            "value": self.value,
            "ceiling": self.ceiling,
            "stopped": self.stopped,
            "elapsed_s": round(self.elapsed_s, 1),
            "probes": [p.row() for p in self.probes],
        }


def search_settings(point: LoadPoint) -> dict[str, Any]:
    search = dict(point.settings["search"])
    return {
        **DEFAULTS,
        "over": "rate" if point.settings.get("mode") == "poisson" else "concurrency",
        **search,
    }


def probe_point(point: LoadPoint, over: str, value: float) -> LoadPoint:
    """The load point at one rate (or concurrency), judged on every threshold but the capacity's
    own.
    """
    settings = {k: v for k, v in point.settings.items() if k != "search"}
    settings[over] = int(value) if over == "concurrency" else value
    thresholds = {
        k: v for k, v in point.thresholds.items() if k not in CAPACITY_THRESHOLDS.values()
    }
    return LoadPoint(f"{point.id}@{value:g}", settings, thresholds)


def saturation(result: PointResult) -> float | None:
    """TTFT median of the window's last third over its first third (by send order), when it rose
    through the middle third too: a queue that grows all run, not one slow moment; None with too few
    requests or no steady rise."""
    measured = sorted(
        (t for run in result.runs for t in run.measured if t.ok and t.event_ns),
        key=lambda t: t.sent_ns,
    )
    if len(measured) < 9:
        return None
    third = len(measured) // 3
    first, middle, last = (
        median(t.event_ns[0] - t.sent_ns for t in part)
        for part in (measured[:third], measured[third:-third], measured[-third:])
    )
    return last / first if 0 < first < middle < last else None


def judge_probe(result: PointResult, settings: dict[str, Any]) -> tuple[str, str]:
    verdict = result.verdict
    if verdict.status == "invalid":
        return "invalid", "; ".join(verdict.invalid)
    errors = result.figures().get("error_share") or 0.0
    if errors > settings["stop_error_share"]:
        return "errors", f"error share {errors:.0%} over {settings['stop_error_share']:.0%}"
    ratio = saturation(result)
    if ratio is not None and ratio > settings["saturation_ratio"]:
        return (
            "saturated",
            f"TTFT median grew {ratio:.1f}x from the first third of the window to the last: the "
            "queue grew all run",
        )
    if verdict.status == "fail":
        return "fail", "; ".join(str(c) for c in verdict.failures)
    return "pass", ""


def _next(low: float, high: float, over: str) -> float | None:
    """The bisection point between a pass and a failure, or None when they are adjacent."""
    if over == "concurrency":
        mid = (int(low) + int(high)) // 2
        return mid if int(low) < mid < int(high) else None
    return round((low * high) ** 0.5, 3)  # geometric: the bracket's ratio halves in log space


def search(point: LoadPoint, measure: Callable[[LoadPoint], PointResult]) -> Capacity:
    """Search ``point``'s capacity, ``measure`` running one probe (a full load point) and judging
    it.
    """
    s = search_settings(point)
    over, start, top = s["over"], float(s["start"]), float(s["max"])
    began = time.monotonic()
    cap = Capacity(over, None, None, "")
    value: float | None = start
    while value is not None:
        if len(cap.probes) >= s["max_probes"]:
            cap.stopped = f"max_probes ({s['max_probes']}) ran"
            break
        result = measure(probe_point(point, over, value))
        status, reason = judge_probe(result, s)
        cap.probes.append(CapacityProbe(value, status, reason, result))
        if status == "invalid":
            cap.stopped = f"an invalid measurement at {over} {value:g}: {reason}"
            break
        if status == "pass":
            cap.value = value if cap.value is None else max(cap.value, value)
        else:
            cap.ceiling = value if cap.ceiling is None else min(cap.ceiling, value)
        if cap.value is None:  # nothing passed yet: below start, halve
            lower = value / 2 if over == "rate" else float(int(value) // 2)
            value = lower if lower >= (1 if over == "concurrency" else start / 16) else None
            if value is None:
                cap.stopped = f"the first probes failed down to {over} {cap.probes[-1].value:g}"
            continue
        if cap.ceiling is None:  # still climbing
            if value >= top:
                cap.stopped = f"every probe passed up to the search's maximum ({top:g})"
                break
            value = min(value * 2, top)
            continue
        if over == "rate" and cap.ceiling / cap.value <= 1 + s["resolution"]:
            cap.stopped = f"bracketed within {s['resolution']:.0%}"
            break
        value = _next(cap.value, cap.ceiling, over)
        if value is None:
            cap.stopped = "bracketed to one stream"
    cap.elapsed_s = time.monotonic() - began
    return cap


@dataclass(slots=True)
class CapacityResult:
    """A capacity point's outcome, shaped as a load point's (``PointResult``) for the suite and the
    reports.
    """

    point: LoadPoint
    capacity: Capacity
    verdict: PointVerdict

    def figures(self) -> dict[str, Any]:
        return {} if self.capacity.value is None else {self.capacity.figure: self.capacity.value}

    def record(self, **context: Any) -> dict[str, Any]:
        best = next(
            (
                p.result
                for p in reversed(self.capacity.probes)
                if p.status == "pass" and p.value == self.capacity.value
            ),
            None,
        )
        entry = {
            **context,
            "load_point": self.point.id,
            "concurrency": None,
            "rate": None,
            "verdict": self.verdict.status,
            "failures": [
                *(f"measurement invalid: {r}" for r in self.verdict.invalid),
                *(str(c) for c in self.verdict.failures),
            ],
            "checks": self.verdict.to_dict()["checks"],
            "thresholds": self.point.thresholds,
            "metrics": self.figures(),
            "figures": {**self.figures(), "capacity": self.capacity.describe()},
            "capacity": self.capacity.to_dict(),
            "repeat": 1,
        }
        # what the server did at its capacity: the workload, and the client's own figures
        if best is not None:
            entry.update(
                {
                    k: v
                    for k, v in best.record().items()
                    if k in ("load", "workload", "calibration", "client", "server")
                }
            )
        return entry

    def table(self) -> str:
        lines = [
            f"load point {self.point.id}: {self.verdict.status.upper()}: capacity "
            f"{self.capacity.describe()}"
            f" ({self.capacity.stopped}; {len(self.capacity.probes)} probes in "
            f"{self.capacity.elapsed_s:.0f} s)"
        ]
        lines += [f"  measurement invalid: {r}" for r in self.verdict.invalid]
        lines += [f"  {c}" for c in self.verdict.checks]
        lines += [
            f"  {self.capacity.over} {p.value:g}: {p.status}{': ' + p.reason if p.reason else ''}"
            for p in self.capacity.probes
        ]
        return "\n".join(lines)


def capacity_verdict(point: LoadPoint, cap: Capacity) -> PointVerdict:
    """Invalid when any probe was (beyond it the client, not the server, set the pace); else the
    capacity against its minimum."""
    if cap.invalid:
        return PointVerdict("invalid", invalid=cap.invalid)
    key = CAPACITY_THRESHOLDS[cap.over]
    limit = point.thresholds.get(key)
    if limit is None:
        ok = cap.value is not None
        start = float(search_settings(point)["start"])
        return PointVerdict(
            "pass" if ok else "fail",
            [
                ThresholdCheck(
                    cap.figure,
                    cap.value,
                    start,
                    ">=",
                    ok,
                    "" if ok else "no probe held its thresholds",
                )
            ],
        )
    ok = cap.value is not None and cap.value >= limit
    return PointVerdict("pass" if ok else "fail", [ThresholdCheck(key, cap.value, limit, ">=", ok)])


def evaluate_capacity(
    point: LoadPoint, measure: Callable[[LoadPoint], PointResult]
) -> CapacityResult:
    cap = search(point, measure)
    return CapacityResult(point, cap, capacity_verdict(point, cap))


@dataclass(frozen=True, slots=True)
class Interleaved:
    """One load point measured on several targets in turns; ``id`` tells the gate their runs pair
    up.
    """

    id: str
    results: dict[str, PointResult | CapacityResult]

    def __getitem__(self, target_id: str) -> PointResult | CapacityResult:
        return self.results[target_id]
