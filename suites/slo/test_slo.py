"""One test per load point of the chosen SLO profile: pass or fail against its thresholds.

    pytest suites/slo -m slo --infer-framework=vllm --slo=cpu

The figures go to the report (user properties, the "slo figures" section) and to
``results.json`` (``slo``); an untrustworthy measurement is an ERROR, not a verdict. A point whose limits the
profile leaves to each engine, on an engine (or endpoint) it set none for, is "not exercised", naming the limits
not set: it passed only what applies to every engine, which is no pass of the point.
"""

from __future__ import annotations

import pytest

from pytest_infer.outcomes import NotExercised

pytestmark = pytest.mark.slo


def test_load_point_meets_slo(slo_result, infer_target, infer_live_server, slo_profile):
    verdict = slo_result.verdict
    if verdict.status == "fail":
        failed = "; ".join(str(c) for c in verdict.failures)
        pytest.fail(
            f"{infer_target.id} misses its SLO at load point {slo_result.point.id}: {failed}\n{slo_result.table()}",
            pytrace=False,
        )
    assert verdict.status == "pass", verdict.status
    if not_set := slo_result.point.not_set:
        raise NotExercised(
            f"no limits set for {infer_live_server.framework} on this profile ({slo_profile.name}, load point"
            f" {slo_result.point.id}): {', '.join(not_set)} not judged; only {', '.join(slo_result.point.thresholds)}"
            " held"
        )
