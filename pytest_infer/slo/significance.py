"""Is a timing change real or noise? A one-sided test over repeated measurements.

Timings on a shared CI machine wander from run to run. A figure that crossed
its threshold only gates when the repeated runs (or the per-request samples)
of the candidate are worse than the baseline's with ``p < alpha``; with too
few measurements to test, the point estimate decides and the report says so.
Runs of two sessions are compared with Mann-Whitney, which makes no normality
assumption. Runs measured in turns (``--slo-interleave``) come in pairs that
shared the machine's state, so the pairs' differences are tested instead
(Wilcoxon signed-rank, exact, again without a normality assumption): the drift
both saw cancels, which no unpaired test can use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .metrics.catalogue import Figure

from ..table import ALPHA
from .metrics.catalogue import samples_of
from .metrics.stats import scipy_stats

# with 3 v 3 the smallest one-sided p is 0.05, never below alpha; 4 v 4 can reach 0.014
MIN_RUNS = 4
# the smallest one-sided signed-rank p is 2**-n: 0.031 at 5 pairs, 0.0625 at 4 (never below alpha)
MIN_PAIRS = 5
MIN_SAMPLES = 20


@dataclass(frozen=True, slots=True)
class Significance:
    p_value: float | None
    basis: str  # "runs (n=5 v 5)", "samples (n=200 v 200)", or "point estimate (no repeated runs)"

    def significant(self, alpha: float = ALPHA) -> bool:
        return self.p_value is None or self.p_value < alpha


def sample_keys(metric: Figure) -> list[Figure]:
    """The per-request samples a summary figure may come from: ``ttft_p99_ms`` -> ``ttft_ms``."""
    return samples_of(metric)


def mann_whitney_greater(x: list[float], y: list[float]) -> float:
    """One-sided p-value that ``x`` tends to be greater than ``y`` (exact for small samples without
    ties).

    scipy.stats is imported here, not at module level: it costs about a second, paid only by a
    gate that has repeated measurements to test.
    """
    mannwhitneyu = scipy_stats(
        "the gate's significance tests of repeated measurements"
    ).mannwhitneyu
    if len(set(x) | set(y)) == 1:
        # all equal: no evidence either way (scipy's asymptotic path has no variance to use)
        return 1.0
    return float(mannwhitneyu(x, y, alternative="greater", method="auto").pvalue)


def worse_test(before: list[float], after: list[float], *, higher_is_better: bool) -> float:
    """One-sided p-value that ``after`` is worse than ``before``."""
    return (
        mann_whitney_greater(before, after)
        if higher_is_better
        else mann_whitney_greater(after, before)
    )


def paired_worse_test(before: list[float], after: list[float], *, higher_is_better: bool) -> float:
    """One-sided p-value that ``after[i]`` is worse than ``before[i]``, run by run (Wilcoxon
    signed-rank, exact).
    """
    wilcoxon = scipy_stats("the gate's paired significance tests of repeated runs").wilcoxon
    differences = [a - b for a, b in zip(after, before)]
    if not any(differences):
        return 1.0  # identical runs: no evidence either way (scipy refuses all-zero differences)
    return float(
        wilcoxon(
            differences,
            alternative="less" if higher_is_better else "greater",
            method="auto",
            zero_method="zsplit",
        ).pvalue
    )


def significance(
    metric: Figure,
    before_runs: list[float],
    after_runs: list[float],
    before_samples: dict[Figure, list[float]],
    after_samples: dict[Figure, list[float]],
    *,
    higher_is_better: bool,
    paired: bool = False,
    unit: str = "runs",
) -> Significance:
    """``unit`` names what the repeated figures are of: runs, or the slices of runs measured in
    turns slice by slice.
    """
    if paired and len(before_runs) == len(after_runs) >= MIN_PAIRS:
        p = paired_worse_test(before_runs, after_runs, higher_is_better=higher_is_better)
        return Significance(p, f"paired {unit} (n={len(before_runs)}, interleaved)")
    if len(before_runs) >= MIN_RUNS and len(after_runs) >= MIN_RUNS:
        p = worse_test(before_runs, after_runs, higher_is_better=higher_is_better)
        return Significance(p, f"runs (n={len(before_runs)} v {len(after_runs)})")
    for key in sample_keys(metric):
        b, a = before_samples.get(key, []), after_samples.get(key, [])
        if len(b) >= MIN_SAMPLES and len(a) >= MIN_SAMPLES:
            p = worse_test(b, a, higher_is_better=higher_is_better)
            shown = next(k for k in before_samples if k == key)  # as the results spelled it
            return Significance(p, f"samples of {shown} (n={len(b)} v {len(a)})")
    return Significance(None, "point estimate (no repeated runs)")
