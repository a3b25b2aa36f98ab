"""Metric definitions (docs/performance-slos.md) and their catalogue, statistics and SLO judging,
computed from load traces only."""

from __future__ import annotations

from ..._lazy import exports

_NAMES = {
    "CATALOGUE": "catalogue",
    "Figure": "catalogue",
    "Metric": "catalogue",
    "UnknownMetric": "catalogue",
    "headline": "catalogue",
    "higher_is_better": "catalogue",
    "parse": "catalogue",
    "register": "catalogue",
    "resolve": "catalogue",
    "stored": "catalogue",
    "threshold": "catalogue",
    "unregister": "catalogue",
    "RequestMetrics": "definitions",
    "request_metrics": "definitions",
    "PointVerdict": "judge",
    "ThresholdCheck": "judge",
    "ValidityRules": "judge",
    "request_limits": "judge",
    "validity": "judge",
    "PERCENTILE_METHOD": "stats",
    "Estimate": "stats",
    "InsufficientSamples": "stats",
    "confidence_interval": "stats",
    "median_interval": "stats",
    "min_samples": "stats",
    "percentile": "stats",
    "Summary": "summary",
    "summarize": "summary",
}
# ``judge`` the function is imported from ``metrics.judge``: once that module is loaded, the
# package attribute ``judge`` is the module, so the package cannot export the function lazily.
__getattr__, __dir__ = exports(__name__, _NAMES)
__all__ = list(_NAMES)
