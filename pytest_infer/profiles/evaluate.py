"""Run one load point of a profile against a server, and judge it: measure -> validity -> verdict.

This is what each SLO test does; it lives here (not in the suite) so that the
benchmarks and the plugin's own tests drive exactly the same path.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

from ..client.endpoint import Endpoint
from ..load import LoadRun, run_load
from ..load.monitor import listening_pid
from ..load.prompts import Calibration
from ..metrics import (
    InsufficientSamples,
    Summary,
    ValidityRules,
    Verdict,
    confidence_interval,
    percentile,
    request_limits,
    summarize,
    validity,
)
from ..metrics.catalogue import PER_REQUEST, metric
from ..metrics.judge import judge
from . import LoadPoint

CI_FIGURES = ("output_tokens_per_s", "ttft_p50_ms", "tpot_p50_ms", "e2e_p50_ms")
# the server's one-per-request samples, kept in the results for the gate's significance tests
SAMPLED = tuple(m for m in PER_REQUEST if m.samples == "request" and not m.client)
TABLE_FIGURES = ("requests", "failed", "window_s", "output_tokens_per_s", "requests_per_s", "goodput_rps", "attainment",
                 "ttft_p50_ms", "ttft_p99_ms", "ttfb_p50_ms", "itl_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "prompt_tokens_mean",
                 "output_tokens_mean", "peak_rss_gb", "peak_gpu_memory_gb")
LOOP_LAG = metric("loop_lag")


@dataclass(slots=True)
class PointResult:
    point: LoadPoint
    runs: list[LoadRun]
    summary: Summary
    verdict: Verdict
    client: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    confidence: dict[str, str] = field(default_factory=dict)
    per_run: list[dict[str, Any]] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {**self.summary.figures(), **self.resources}

    def record(self, **context: Any) -> dict[str, Any]:
        """The JSON entry for ``SessionResults.slo`` (the shape ``results.views.slo_points`` reads)."""
        spec = self.point.load_spec()
        entry = {
            **context,
            "load_point": self.point.id,
            "concurrency": spec.concurrency if spec.mode == "closed" else None,
            "rate": spec.rate,
            "verdict": self.verdict.status,
            "failures": [*(f"measurement invalid: {r}" for r in self.verdict.invalid), *(str(c) for c in self.verdict.failures)],
            "checks": self.verdict.to_dict()["checks"],
            "thresholds": self.point.thresholds,
            "metrics": {k: v for k, v in self.figures().items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
            "figures": self.figures(),
            "samples": {m.figure(): [round(x, 3) for x in self.summary.samples.get(m.name, [])] for m in SAMPLED},
            "client": self.client,
            "confidence": self.confidence,
            **self.runs[0].describe(),
            "repeat": len(self.runs),
        }
        if len(self.runs) > 1:
            entry["runs"] = self.per_run
        return entry

    def table(self) -> str:
        """The figures and checks as text, for the test report."""
        lines = [f"load point {self.point.id}: {self.verdict.status.upper()}"]
        lines += [f"  measurement invalid: {r}" for r in self.verdict.invalid]
        lines += [f"  {c}" for c in self.verdict.checks]
        f = self.figures()
        lines.append("  figures: " + ", ".join(f"{k}={f[k]}" for k in TABLE_FIGURES if k in f))
        lines.append("  client: " + ", ".join(f"{k}={v}" for k, v in self.client.items()))
        lines += [f"  {k}: {v}" for k, v in self.confidence.items()]
        return "\n".join(lines)


def server_pid(base_url: str, pid: int | None) -> int | None:
    """The launched server's pid, or the local listener of a loopback endpoint."""
    if pid is not None:
        return pid
    url = urlparse(base_url)
    if url.hostname in ("127.0.0.1", "localhost", "::1") and url.port:
        return listening_pid(url.port)
    return None


@dataclass(frozen=True, slots=True)
class Subject:
    """One server a load point is measured on (one target of the session)."""

    point: LoadPoint
    endpoint: Endpoint
    framework: str
    pid: int | None = None


def evaluate_point(
    point: LoadPoint,
    endpoint: Endpoint,
    *,
    framework: str,
    rules: ValidityRules | None = None,
    pid: int | None = None,
    calibration: Calibration | None = None,
) -> PointResult:
    return evaluate_interleaved([Subject(point, endpoint, framework, pid)], rules=rules, calibration=calibration)[0]


def evaluate_interleaved(subjects: list[Subject], *, rules: ValidityRules | None = None, calibration: Calibration | None = None) -> list[PointResult]:
    """Measure each subject's load point ``repeat`` times, the subjects taking turns run by run.

    Alternating baseline and candidate (in A B B A order, so neither always runs later) spreads
    the machine's drift over both, which sequential sessions turn into a false difference.
    """
    subjects = [replace(s, pid=server_pid(s.endpoint.base_url, s.pid)) for s in subjects]
    plans = [
        (replace(s.endpoint, timeout=s.point.timeout_s) if s.point.timeout_s else s.endpoint, s.point.load_spec(), s.point.workload(s.framework))
        for s in subjects
    ]  # fmt: skip
    runs: list[list[LoadRun]] = [[] for _ in subjects]
    calibrations = [calibration] * len(subjects)
    order = list(range(len(subjects)))
    for i in range(max(s.point.repeat for s in subjects)):
        for k in order if i % 2 == 0 else reversed(order):
            if i < subjects[k].point.repeat:
                endpoint, spec, workload = plans[k]
                run = run_load(endpoint, spec, workload, server_pid=subjects[k].pid, calibration=calibrations[k], seed=i)
                calibrations[k] = run.calibration
                runs[k].append(run)
    return [_judged(s.point, r, s.pid, rules) for s, r in zip(subjects, runs)]


def _judged(point: LoadPoint, runs: list[LoadRun], pid: int | None, rules: ValidityRules | None) -> PointResult:
    limits = request_limits(point.thresholds)
    # pooled over repeats: samples concatenated, the windows added up
    traces = [t for run in runs for t in run.traces]
    total_ns = sum(run.window_end_ns - run.window_start_ns for run in runs)
    summary = summarize(traces, 0, total_ns, limits)
    lag = [x for run in runs for x in run.loop_lag_ms]
    busy = max(run.client.busy_share for run in runs)
    worst = max(runs, key=lambda r: r.client.busy_share).client
    client: dict[str, Any] = {
        "busy_share": round(busy, 3),
        "cpu_share": round(worst.cpu_share, 3),
        "wait_share": None if worst.wait_share is None else round(worst.wait_share, 3),
        "loop_lag_samples": len(lag),
    }
    for q in (50, 99):
        try:
            client[LOOP_LAG.figure(f"p{q}")] = round(percentile(lag, q), 2)
        except InsufficientSamples:
            client[LOOP_LAG.figure(f"p{q}")] = "insufficient samples"
    rss = [r.resources.rss_bytes for r in runs if r.resources.rss_bytes is not None]
    gpus = [r.resources.gpu_memory_bytes for r in runs if r.resources.gpu_memory_bytes]
    resources = {
        "server_pid": pid,
        "peak_rss_gb": round(max(rss) / 2**30, 3) if rss else None,
        "peak_gpu_memory_gb": [round(max(col) / 2**30, 3) for col in zip(*gpus)] if gpus else None,
    }
    invalid = validity(
        summary, point.thresholds, client_busy=busy, client_cpu=worst.cpu_share, client_wait=worst.wait_share, loop_lag_ms=lag, rules=rules
    )
    verdict = judge(summary, point.thresholds, resources, invalid)
    confidence: dict[str, str] = {}
    per_run: list[dict[str, Any]] = []
    if len(runs) > 1:
        for run in runs:
            figures = summarize(run.traces, run.window_start_ns, run.window_end_ns, limits).figures()
            per_run.append({k: v for k, v in figures.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        for key in CI_FIGURES:
            values = [f[key] for f in per_run if key in f]
            if len(values) == len(runs):
                confidence[key] = str(confidence_interval(values))
    return PointResult(point, runs, summary, verdict, client, resources, confidence, per_run)
