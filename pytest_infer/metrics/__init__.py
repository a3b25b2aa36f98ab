"""Metric definitions (docs/performance-slos.md) and their catalogue, statistics and SLO judging, computed from load traces only."""
from __future__ import annotations

from .catalogue import CATALOGUE, Metric, UnknownMetric, headline, higher_is_better, resolve, threshold
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
    "CATALOGUE",
    "PERCENTILE_METHOD",
    "Check",
    "Estimate",
    "InsufficientSamples",
    "Metric",
    "RequestMetrics",
    "Summary",
    "UnknownMetric",
    "ValidityRules",
    "Verdict",
    "confidence_interval",
    "headline",
    "higher_is_better",
    "judge",
    "min_samples",
    "percentile",
    "request_limits",
    "request_metrics",
    "resolve",
    "summarize",
    "threshold",
    "validity",
]
