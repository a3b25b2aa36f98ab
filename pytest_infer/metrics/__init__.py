"""Metric definitions (docs/performance-slos.md), statistics and SLO judging, computed from load traces only."""
from __future__ import annotations

from .definitions import RequestMetrics, request_metrics
from .judge import Check, ValidityRules, Verdict, judge, request_limits, validity
from .stats import (
    PERCENTILE_METHOD,
    Estimate,
    InsufficientSamples,
    confidence_interval,
    min_samples,
    percentile,
)
from .summary import Summary, summarize

__all__ = [
    "PERCENTILE_METHOD",
    "Check",
    "Estimate",
    "InsufficientSamples",
    "RequestMetrics",
    "Summary",
    "ValidityRules",
    "Verdict",
    "confidence_interval",
    "judge",
    "min_samples",
    "percentile",
    "request_limits",
    "request_metrics",
    "summarize",
    "validity",
]
