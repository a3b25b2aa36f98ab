"""The gate's one-sided Mann-Whitney test (scipy's), on the cases the gate relies on."""

from __future__ import annotations

import pytest

from pytest_infer.slo.significance import MIN_RUNS, mann_whitney_greater, worse_test


def test_four_runs_each_fully_separated_reach_significance():
    """Why MIN_RUNS is 4: 4 v 4 without overlap gives the exact p = 1/70; 3 v 3 cannot go below 1/20."""
    assert mann_whitney_greater([5.0, 6, 7, 8], [1.0, 2, 3, 4]) == pytest.approx(1 / 70)
    assert mann_whitney_greater([4.0, 5, 6], [1.0, 2, 3]) == pytest.approx(1 / 20)
    assert MIN_RUNS == 4


def test_the_direction_counts():
    assert mann_whitney_greater([1.0, 2, 3, 4], [5.0, 6, 7, 8]) == pytest.approx(1.0)
    assert (
        worse_test([10.0, 11, 12, 13], [20.0, 21, 22, 23], higher_is_better=False) < 0.05
    )  # latency rose
    assert (
        worse_test([10.0, 11, 12, 13], [20.0, 21, 22, 23], higher_is_better=True) > 0.5
    )  # throughput rose


def test_all_equal_is_never_significant():
    assert mann_whitney_greater([1.0] * 10, [1.0] * 10) >= 0.5
