"""One test per load point of the chosen SLO profile: pass or fail against its thresholds.

    pytest suites/slo -m slo --infer-framework=vllm --slo=cpu

The figures go to the report (user properties, the "slo figures" section) and to
``results.json`` (``slo``); an untrustworthy measurement is an ERROR, not a verdict.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slo


def test_load_point_meets_slo(slo_result, infer_target):
    verdict = slo_result.verdict
    if verdict.status == "fail":
        failed = "; ".join(str(c) for c in verdict.failures)
        pytest.fail(
            f"{infer_target.id} misses its SLO at load point {slo_result.point.id}: {failed}\n{slo_result.table()}",
            pytrace=False,
        )
    assert verdict.status == "pass", verdict.status
