"""The Mann-Whitney test the gate uses agrees with scipy's (the reference) on exact and asymptotic paths."""
from __future__ import annotations

import random

import pytest

from pytest_infer.gating.stats import mann_whitney_greater

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is the reference implementation (pip install scipy)")


@pytest.mark.parametrize(
    ("n1", "n2", "ties"),
    [(3, 3, False), (4, 5, False), (8, 8, False), (5, 5, True), (9, 12, False), (40, 30, True), (200, 200, False)],
)
def test_agrees_with_scipy(n1, n2, ties):
    rng = random.Random(n1 * 100 + n2)
    for shift in (0.0, 0.3, -0.3, 1.0):
        draw = (lambda: round(rng.gauss(0, 1), 0)) if ties else (lambda: rng.gauss(0, 1))
        x = [draw() + shift for _ in range(n1)]
        y = [draw() for _ in range(n2)]
        expected = scipy_stats.mannwhitneyu(x, y, alternative="greater", method="auto").pvalue
        assert mann_whitney_greater(x, y) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_all_equal_is_never_significant():
    assert mann_whitney_greater([1.0] * 10, [1.0] * 10) >= 0.5
