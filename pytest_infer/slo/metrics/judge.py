"""Judging a load point: is the measurement valid, and did the server meet its thresholds?

A measurement is invalid (neither pass nor fail) when the client may have set the
pace (its thread busy most of the window, its event loop or schedule lagging) or
when the plan gives too few samples for a thresholded percentile. Invalid comes
first: a figure that cannot be trusted is never compared with a threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .catalogue import Metric, metric, threshold
from .stats import InsufficientSamples, min_samples, percentile
from .summary import Summary

SCHEDULE_LAG = metric("schedule_lag")


def request_limits(thresholds: Mapping[str, float]) -> dict[Metric, float]:
    """The per-request limits goodput counts against: the p99 thresholds of the goodput metrics."""
    limits = {}
    for key, value in thresholds.items():
        figure = threshold(key).figure
        if figure.metric.goodput and figure.stat == "p99":
            limits[figure.metric] = float(value)
    return limits


@dataclass(frozen=True, slots=True)
class ValidityRules:
    # share of the window the client's loop thread ran or waited to run
    max_client_busy: float = 0.8
    max_loop_lag_p99_ms: float = 20.0
    max_schedule_lag_p99_ms: float = 20.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ValidityRules:
        return cls(**dict(data or {}))


@dataclass(slots=True)
class ThresholdCheck:
    name: str
    measured: float | None
    limit: float
    op: str
    ok: bool
    note: str = ""
    unmeasured: bool = False  # nothing measured the figure: neither pass nor fail

    def __str__(self) -> str:
        shown = "n/a" if self.measured is None else f"{self.measured:.4g}"
        state = "NOT MEASURED" if self.unmeasured else "ok  " if self.ok else "FAIL"
        return (
            f"{state} {self.name}: {shown} {self.op} "
            f"{self.limit:g}{' (' + self.note + ')' if self.note else ''}"
        )


@dataclass(slots=True)
class PointVerdict:
    status: str  # "pass", "fail" or "invalid"
    checks: list[ThresholdCheck] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[ThresholdCheck]:
        return [c for c in self.checks if not c.ok and not c.unmeasured]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "checks": [asdict(c) for c in self.checks],
            "invalid": self.invalid,
        }


def validity(
    summary: Summary,
    thresholds: Mapping[str, float],
    *,
    client_busy: float | None,
    client_cpu: float | None = None,
    client_wait: float | None = None,
    loop_lag_ms: Sequence[float] = (),
    rules: ValidityRules | None = None,
) -> list[str]:
    """Reasons the measurement cannot be trusted; empty when it can."""
    rules = rules or ValidityRules()
    reasons: list[str] = []
    if client_busy is not None and client_busy > rules.max_client_busy:
        parts = f"cpu {client_cpu:.0%}" if client_cpu is not None else ""
        if client_wait is not None:
            parts += f", waiting for a CPU {client_wait:.0%}"
        reasons.append(
            f"client saturated: its event-loop thread was busy {client_busy:.0%} of the window "
            f"({parts}), "
            f"over the {rules.max_client_busy:.0%} limit"
        )
    lag = _p99_at_least(loop_lag_ms, "tick")
    if lag is not None and lag[0] > rules.max_loop_lag_p99_ms:
        reasons.append(f"client event loop lagged: p99 {lag[1]} > {rules.max_loop_lag_p99_ms:g} ms")
    lag = _p99_at_least(summary.samples.get(SCHEDULE_LAG, []), "request")
    if lag is not None and lag[0] > rules.max_schedule_lag_p99_ms:
        reasons.append(
            f"client fell behind its arrival schedule: p99 lag {lag[1]} > "
            f"{rules.max_schedule_lag_p99_ms:g} ms"
        )
    for key in thresholds:
        figure = threshold(key).figure
        if figure.percentile is None:
            continue
        need = min_samples(figure.percentile)
        # the plan must supply enough requests; a shortfall from failed requests is the server's
        # fail
        m = figure.metric
        planned = summary.requests if m.samples == "request" else len(summary.samples.get(m, []))
        if planned < need:
            reasons.append(
                f"insufficient samples: {key} needs at least {need}, the load point measured "
                f"{planned}"
            )
    return reasons


def _p99_at_least(samples: Sequence[float], unit: str) -> tuple[float, str] | None:
    """A lower bound of the p99 and how it reads: the p99 itself, or from too few samples the
    highest percentile they resolve (a loop stalled for most of the window ticks only a few times).
    """
    if not samples:
        return None
    q = min(99.0, 100 - 100 / len(samples))
    lag = percentile(samples, q)
    if q == 99:
        return lag, f"{lag:.1f} ms"
    return (
        lag,
        f"at least {lag:.1f} ms (p{q:.3g} of only {len(samples)} {unit}{'s' * (len(samples) > 1)})",
    )


def judge(
    summary: Summary,
    thresholds: Mapping[str, float],
    resources: Mapping[str, Any] | None = None,
    invalid: Sequence[str] = (),
) -> PointVerdict:
    """Compare the figures with each threshold; ``invalid`` reasons make it ``invalid`` outright.

    A threshold whose figure was not measured (no NVML for GPU memory, no server process to watch)
    makes the point ``invalid`` too, naming what was missing: a limit the profile sets is never
    passed unseen. An invalid measurement lists those beside its own reasons (no figure is
    compared), so a rerun learns both at once.
    """
    # all([]) would pass whatever was measured; profiles refuse such a point before a run
    if not thresholds:
        return PointVerdict(
            "invalid", invalid=[*invalid, "no thresholds: nothing judged the figures"]
        )
    measured = dict(resources or {})
    # why the monitor could not measure a figure (no NVML, no counter)
    reasons = measured.get("not_measured") or {}
    checks: list[ThresholdCheck] = []
    unmeasured: list[str] = []
    for key, limit in thresholds.items():
        bound = threshold(key)
        figure = bound.figure
        if figure.percentile is not None:
            try:
                measured_q = summary.value(figure)
                checks.append(
                    ThresholdCheck(
                        key, measured_q, float(limit), bound.op, bound.holds(measured_q, limit)
                    )
                )
            except InsufficientSamples as exc:
                checks.append(
                    ThresholdCheck(
                        key,
                        None,
                        float(limit),
                        bound.op,
                        False,
                        f"{summary.failed} of {summary.requests} requests failed: {exc}",
                    )
                )
            continue
        # resources (memory peaks) come from the load run, stored under their names; the rest the
        # summary computes
        value = measured[figure.name] if figure.name in measured else summary.value(figure)
        if isinstance(value, list):  # per-GPU memory: the largest one
            value = max(value) if value else None
        if value is None:
            if figure.name in reasons:
                why = f"not measured: {reasons[figure.name]}"
            else:
                why = (
                    f"not measured: needs {figure.metric.needs}"
                    if figure.metric.needs
                    else "not measured"
                )
            checks.append(
                ThresholdCheck(key, None, float(limit), bound.op, False, why, unmeasured=True)
            )
            unmeasured.append(f"{key} {why}")
            continue
        checks.append(
            ThresholdCheck(key, float(value), float(limit), bound.op, bound.holds(value, limit))
        )
    if invalid:
        return PointVerdict("invalid", invalid=[*invalid, *unmeasured])
    if unmeasured:
        return PointVerdict("invalid", checks, unmeasured)
    return PointVerdict("pass" if all(c.ok for c in checks) else "fail", checks)
