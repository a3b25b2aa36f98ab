"""Judging a load point: is the measurement valid, and did the server meet its thresholds?

A measurement is invalid (neither pass nor fail) when the client may have set the
pace (its thread busy most of the window, its event loop or schedule lagging) or
when the plan gives too few samples for a thresholded percentile. Invalid comes
first: a figure that cannot be trusted is never compared with a threshold.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .stats import InsufficientSamples, min_samples, percentile
from .summary import METRICS, Summary

PERCENTILE_KEY = re.compile(r"^(?P<metric>[a-z0-9_]+?)_p(?P<q>\d+(?:\.\d+)?)_ms$")
SCALAR_KEYS = {
    "min_output_tokens_per_s": ("output_tokens_per_s", ">="),
    "min_requests_per_s": ("requests_per_s", ">="),
    "min_goodput_share": ("attainment", ">="),
    "max_error_share": ("error_share", "<="),
    "max_rss_gb": ("peak_rss_gb", "<="),
    "max_gpu_memory_gb": ("peak_gpu_memory_gb", "<="),
}
# the p99 thresholds double as the per-request limits that goodput counts against
GOODPUT_LIMITS = {"ttft_p99_ms": "ttft_ms", "tpot_p99_ms": "tpot_ms", "e2e_p99_ms": "e2e_ms"}


def threshold_keys() -> list[str]:
    """Every key a profile's ``thresholds`` may use (for the schema's error messages)."""
    return [f"{m}_p<q>_ms" for m in METRICS if m != "schedule_lag"] + list(SCALAR_KEYS)


def check_threshold_key(key: str) -> str | None:
    """None if ``key`` is a valid threshold name, else why not."""
    if key in SCALAR_KEYS:
        return None
    match = PERCENTILE_KEY.match(key)
    if not match or match["metric"] not in METRICS or match["metric"] == "schedule_lag":
        return f"unknown threshold {key!r}; valid: {', '.join(threshold_keys())}"
    if not 0 < float(match["q"]) < 100:
        return f"threshold {key!r}: the percentile must be between 0 and 100"
    return None


def request_limits(thresholds: Mapping[str, float]) -> dict[str, float]:
    return {GOODPUT_LIMITS[k]: float(v) for k, v in thresholds.items() if k in GOODPUT_LIMITS}


@dataclass(frozen=True, slots=True)
class ValidityRules:
    max_client_busy: float = 0.8  # share of the window the client's loop thread ran or waited to run
    max_loop_lag_p99_ms: float = 20.0
    max_schedule_lag_p99_ms: float = 20.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ValidityRules:
        return cls(**dict(data or {}))


@dataclass(slots=True)
class Check:
    name: str
    measured: float | None
    limit: float
    op: str
    ok: bool
    note: str = ""

    def __str__(self) -> str:
        shown = "n/a" if self.measured is None else f"{self.measured:.4g}"
        return f"{'ok  ' if self.ok else 'FAIL'} {self.name}: {shown} {self.op} {self.limit:g}{' (' + self.note + ')' if self.note else ''}"


@dataclass(slots=True)
class Verdict:
    status: str  # "pass", "fail" or "invalid"
    checks: list[Check] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "checks": [asdict(c) for c in self.checks], "invalid": self.invalid}


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
            f"client saturated: its event-loop thread was busy {client_busy:.0%} of the window ({parts}), "
            f"over the {rules.max_client_busy:.0%} limit"
        )
    if len(loop_lag_ms) >= min_samples(99):
        lag = percentile(loop_lag_ms, 99)
        if lag > rules.max_loop_lag_p99_ms:
            reasons.append(f"client event loop lagged: p99 {lag:.1f} ms > {rules.max_loop_lag_p99_ms:g} ms")
    lags = summary.samples.get("schedule_lag", [])
    if len(lags) >= min_samples(99):
        lag = percentile(lags, 99)
        if lag > rules.max_schedule_lag_p99_ms:
            reasons.append(f"client fell behind its arrival schedule: p99 lag {lag:.1f} ms > {rules.max_schedule_lag_p99_ms:g} ms")
    for key in thresholds:
        match = PERCENTILE_KEY.match(key)
        if not match:
            continue
        need = min_samples(float(match["q"]))
        # the plan must supply enough requests; a shortfall from failed requests is the server's fail
        planned = summary.requests if match["metric"] in ("ttft", "ttfb", "e2e", "tpot") else len(summary.samples.get(match["metric"], []))
        if planned < need:
            reasons.append(f"insufficient samples: {key} needs at least {need}, the load point measured {planned}")
    return reasons


def judge(summary: Summary, thresholds: Mapping[str, float], resources: Mapping[str, Any] | None = None, invalid: Sequence[str] = ()) -> Verdict:
    """Compare the figures with each threshold; ``invalid`` reasons make it ``invalid`` outright."""
    if invalid:
        return Verdict("invalid", invalid=list(invalid))
    figures: dict[str, Any] = {
        "output_tokens_per_s": summary.output_tokens_per_s,
        "requests_per_s": summary.requests_per_s,
        "attainment": summary.attainment,
        "error_share": summary.failed / summary.requests if summary.requests else 1.0,
        **(resources or {}),
    }
    checks: list[Check] = []
    for key, limit in thresholds.items():
        match = PERCENTILE_KEY.match(key)
        if match:
            try:
                value: float | None = summary.value(match["metric"], float(match["q"]))
                checks.append(Check(key, value, float(limit), "<=", value <= limit))
            except InsufficientSamples as exc:
                checks.append(Check(key, None, float(limit), "<=", False, f"{summary.failed} of {summary.requests} requests failed: {exc}"))
            continue
        figure, op = SCALAR_KEYS[key]
        value = figures.get(figure)
        if isinstance(value, list):  # per-GPU memory: the largest one
            value = max(value) if value else None
        if value is None:
            checks.append(Check(key, None, float(limit), op, True, "not measured here"))
            continue
        ok = value >= limit if op == ">=" else value <= limit
        checks.append(Check(key, float(value), float(limit), op, ok))
    return Verdict("pass" if all(c.ok for c in checks) else "fail", checks)
