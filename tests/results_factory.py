"""Build results documents for the reporting and gating tests: what the suites would have recorded.

Shaped like real sessions (a vLLM target, checks, a keyword table, SLO load
points with per-request samples and repeated runs), with knobs to make one
part regress, improve or wander.
"""

from __future__ import annotations

import random

from pytest_infer.results.model import SessionResults, TargetRecord, TestRecord
from pytest_infer.slo.drift import Drift, DriftCalibration

CHECKS = (
    "chat.basic",
    "chat.stream_matches",
    "chat.stop_strings",
    "completions.logprobs",
    "chat.n_choices",
)
KEYWORDS = ("enum", "pattern", "minItems", "anyOf", "format:date")


def session(
    version: str = "0.31.0",
    *,
    target: str = "vllm",
    framework: str = "vllm",
    outcomes: dict[str, str] | None = None,
    keywords: dict[str, dict[str, int]] | None = None,
    ttft_ms: float = 40.0,
    output_tps: float = 300.0,
    runs: int = 5,
    noise: float = 0.02,
    seed: int = 0,
    samples: int = 0,
) -> SessionResults:
    rng = random.Random(seed)
    results = SessionResults(
        plugin_version="0.1.0",
        environment={
            "python": "3.11.7",
            "cpu": {"model": "test", "count": 2},
            "gpu": {"count": 0},
            "git": {"commit": "abc123", "dirty": False},
        },
    )
    results.targets[target] = TargetRecord(
        id=target, framework=framework, model="tiny", version=version, variant={"profile": "cpu"}
    )
    for check in CHECKS:
        outcome = (outcomes or {}).get(check, "passed")
        message = f"{check} failed: expected X, got Y" if outcome in ("failed", "error") else ""
        results.add_test(
            TestRecord(
                nodeid=f"suites/conformance/test_chat.py::test_{check.replace('.', '_')}[{target}]",
                target=target,
                outcome=outcome,
                suite="conformance",
                check=check,
                message=message,
                reproducer=f"curl -sS http://127.0.0.1:8000/v1/{check}" if message else "",
            )
        )
    for keyword in KEYWORDS:
        for klass, n in ((keywords or {}).get(keyword) or {"valid": 40}).items():
            results.table("structured").count(target, keyword, klass, n)
    for concurrency in (1, 8, 16):
        for _ in range(runs):
            jitter = lambda: 1 + rng.uniform(-noise, noise)  # noqa: E731
            ttft = ttft_ms * (1 + concurrency / 16) * jitter()
            entry = {
                "target": target,
                "profile": "cpu",
                "load_point": f"c={concurrency}",
                "concurrency": concurrency,
                "verdict": "pass",
                "metrics": {
                    "ttft_p50_ms": ttft,
                    "ttft_p99_ms": ttft * 1.8,
                    "output_tps": output_tps * concurrency**0.7 * jitter(),
                },
            }
            if samples:
                entry["samples"] = {
                    "ttft_ms": [ttft * rng.lognormvariate(0, 0.2) for _ in range(samples)]
                }
            results.table("slo").add(entry)
    return results


def with_capacity(results: SessionResults, verdict: str, outcome: str) -> SessionResults:
    """A load point's test and its SLO entry, as the SLO suite records them; ``invalid`` fails the test as an error."""
    target = next(iter(results.targets))
    nodeid = f"suites/slo/test_slo.py::test_load_point_meets_slo[{target}-capacity]"
    results.add_test(
        TestRecord(
            nodeid=nodeid,
            target=target,
            outcome=outcome,
            suite="slo",
            message="Failed: measurement invalid: client fell behind" if outcome == "error" else "",
        )
    )
    results.table("slo").add(
        {
            "nodeid": nodeid,
            "target": target,
            "profile": "cpu",
            "load_point": "capacity",
            "verdict": verdict,
            "metrics": {"capacity_rps": 64.0},
        }
    )
    return results


class FlatDrift(DriftCalibration):
    """A calibration that bounds every figure's drift between sessions at one share."""

    def __init__(self, bound_pct: float) -> None:
        super().__init__({}, ["s1", "s2", "s3"], 1.0, f"flat {bound_pct:g}%")
        self.bound = Drift(bound_pct, bound_pct, 3)

    def drift(self, key: str, metric: str) -> Drift | None:
        return self.bound


def flat_drift(bound_pct: float = 0.0) -> DriftCalibration:
    """Timing across sessions gated as if the machine drifted by ``bound_pct`` at most (0: never): the statistics alone
    decide."""
    return FlatDrift(bound_pct)
