"""Is a timing change real or noise? A one-sided Mann-Whitney U test over repeated measurements.

Timings on a shared CI machine wander from run to run. A figure that crossed
its threshold only gates when the repeated runs (or the per-request samples)
of the candidate are worse than the baseline's with ``p < alpha``; with too
few measurements to test, the point estimate decides and the report says so.
Mann-Whitney makes no normality assumption, which latency tails violate.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

ALPHA = 0.05
MIN_RUNS = 4  # with 3 v 3 the smallest one-sided p is 0.05, never below alpha; 4 v 4 can reach 0.014
MIN_SAMPLES = 20
_STAT_SUFFIX = re.compile(r"_(p\d+(?:\.\d+)?|mean|median|avg|max|min)(?=_|$)")


@dataclass(frozen=True, slots=True)
class Significance:
    p_value: float | None
    basis: str  # "runs (n=5 v 5)", "samples (n=200 v 200)", or "point estimate (no repeated runs)"

    def significant(self, alpha: float = ALPHA) -> bool:
        return self.p_value is None or self.p_value < alpha


def sample_keys(metric: str) -> list[str]:
    """Per-request sample names a summary figure may come from: ``ttft_p99_ms`` -> ``ttft_ms``, ``ttft``."""
    stem = _STAT_SUFFIX.sub("", metric)
    if stem == metric:
        return []
    return list(dict.fromkeys([stem, stem.rsplit("_", 1)[0] if "_" in stem else stem]))


def _ranks(values: list[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) and the sizes of tied groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties, i = [], 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@lru_cache(maxsize=256)
def _exact_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many orderings of n1 + n2 distinct values give each U of the first sample (0 .. n1*n2)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    a, b = _exact_counts(n1 - 1, n2), _exact_counts(n1, n2 - 1)
    return tuple((a[u - n2] if 0 <= u - n2 < len(a) else 0) + (b[u] if u < len(b) else 0) for u in range(n1 * n2 + 1))


def mann_whitney_greater(x: list[float], y: list[float]) -> float:
    """One-sided p-value that ``x`` tends to be greater than ``y`` (as scipy's ``mannwhitneyu(x, y, "greater")``).

    Exact for small samples without ties, else the normal approximation with
    tie and continuity corrections. Written out (30 lines) rather than importing
    scipy.stats, whose import costs seconds at the end of every gated run.
    """
    n1, n2 = len(x), len(y)
    ranks, ties = _ranks([*x, *y])
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    if n1 <= 8 and n2 <= 8 and all(t == 1 for t in ties):
        counts = _exact_counts(n1, n2)
        return sum(counts[math.ceil(u):]) / math.comb(n1 + n2, n1)
    n = n1 + n2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    if sd == 0:
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / sd
    return 0.5 * math.erfc(z / math.sqrt(2))


def worse_test(before: list[float], after: list[float], *, higher_is_better: bool) -> float:
    """One-sided p-value that ``after`` is worse than ``before``."""
    return mann_whitney_greater(before, after) if higher_is_better else mann_whitney_greater(after, before)


def significance(
    metric: str,
    before_runs: list[float],
    after_runs: list[float],
    before_samples: dict[str, list[float]],
    after_samples: dict[str, list[float]],
    *,
    higher_is_better: bool,
) -> Significance:
    if len(before_runs) >= MIN_RUNS and len(after_runs) >= MIN_RUNS:
        p = worse_test(before_runs, after_runs, higher_is_better=higher_is_better)
        return Significance(p, f"runs (n={len(before_runs)} v {len(after_runs)})")
    for key in sample_keys(metric):
        b, a = before_samples.get(key, []), after_samples.get(key, [])
        if len(b) >= MIN_SAMPLES and len(a) >= MIN_SAMPLES:
            p = worse_test(b, a, higher_is_better=higher_is_better)
            return Significance(p, f"samples of {key} (n={len(b)} v {len(a)})")
    return Significance(None, "point estimate (no repeated runs)")
