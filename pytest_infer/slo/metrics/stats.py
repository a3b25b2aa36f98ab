"""Percentiles with a stated method, refused when the sample cannot support them,
and confidence intervals over repeated runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ...outcomes import InferError, optional_module

# numpy's default: linear interpolation between closest ranks (Hyndman-Fan type 7)
PERCENTILE_METHOD: Final = "linear"


class InsufficientSamples(InferError, ValueError):
    """A percentile the sample is too small to estimate."""


def min_samples(q: float) -> int:
    """Smallest sample for the q-th percentile: at least one observation beyond it on average, on
    its side.

    p50 needs 2, p90 10, p99 100, p99.9 1,000: ``ceil(100 / (100 - q))``; a low percentile the same
    from below, p10 10, p5 20: ``ceil(100 / q)`` (p0, the smallest sample, needs one).
    """
    if not 0 <= q < 100:
        raise ValueError(f"percentile {q} is not in [0, 100)")
    return math.ceil(round(100 / (q if 0 < q < 50 else 100 - q), 9))


def scipy_stats(purpose: str) -> Any:
    """``scipy.stats``, imported when repeated runs are tested (about a second), from the ``stats``
    extra.
    """
    return optional_module("scipy.stats", "stats", purpose)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile by linear interpolation; raises InsufficientSamples when too few."""
    need = min_samples(q)
    if len(values) < need:
        raise InsufficientSamples(f"p{q:g} needs at least {need} samples, got {len(values)}")
    # here, not at module level: the catalogue (imported by reports and the gate) shares this
    # package
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q, method=PERCENTILE_METHOD))


@dataclass(frozen=True, slots=True)
class Estimate:
    """The mean of repeated runs' figures with a two-sided Student-t confidence interval."""

    mean: float
    low: float
    high: float
    runs: int
    confidence: float

    def __str__(self) -> str:
        return (
            f"{self.mean:.4g} [{self.low:.4g}, {self.high:.4g}] ({self.confidence:.0%} CI, "
            f"{self.runs} runs)"
        )


def median_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float] | None:
    """A distribution-free interval for the median of repeated runs (order statistics, as scipy's
    quantile test gives them), or ``None`` when the runs are too few for any two of them to bound it
    at ``confidence`` (below 6 at 95%). A Student-t interval of the mean would pair a skewed tail
    figure with a negative latency."""
    # lazy: numpy takes most of a second to import; reading results needs none
    import numpy as np

    quantile_test = scipy_stats("intervals of repeated runs' medians").quantile_test
    ci = quantile_test(values, q=float(np.median(values)), p=0.5).confidence_interval(confidence)
    return (
        (float(ci.low), float(ci.high))
        if math.isfinite(ci.low) and math.isfinite(ci.high)
        else None
    )


def confidence_interval(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean ± t(1-(1-c)/2, n-1) · s/√n over n ≥ 2 repeated runs."""
    n = len(values)
    if n < 2:
        raise InsufficientSamples(f"a confidence interval needs at least 2 runs, got {n}")
    # lazy: numpy takes most of a second to import; reading results needs none
    import numpy as np

    t = scipy_stats("confidence intervals of repeated runs").t
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    half = float(t.ppf(1 - (1 - confidence) / 2, n - 1) * arr.std(ddof=1) / math.sqrt(n))
    return Estimate(mean, mean - half, mean + half, n, confidence)
