"""Run one load point of a profile against a server, and judge it: measure -> validity -> verdict.

This is what each SLO test does; it lives here (not in the suite) so that the
benchmarks and the plugin's own tests drive exactly the same path.

Where the framework's adapter names its Prometheus metrics, each run also records the
server's own figures (``server`` in the entry), and a disagreement with the client beyond
``metrics.server_check``'s tolerance makes the measurement invalid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

from ...adapters.base import Adapter, ServerMetricNames
from ...client.endpoint import Endpoint
from ...load import LoadRun, LoadSpec, run_load
from ...load.monitor import ClientUsage, ResourcePeak, listening_pid
from ...load.prompts import Calibration
from ...load.server_metrics import COUNTERS, ServerFigures
from ..metrics import (
    InsufficientSamples,
    PointVerdict,
    Summary,
    ValidityRules,
    confidence_interval,
    percentile,
    request_limits,
    summarize,
    validity,
)
from ..metrics.catalogue import CATALOGUE, Metric, confidence_figures, listed_figures, metric
from ..metrics.judge import judge
from ..metrics.server_check import cross_check
from . import LoadPoint


def sampled() -> list[Metric]:
    """The server's one-per-request samples, kept in the results for the gate's significance
    tests.
    """
    return [m for m in CATALOGUE if m.per_request and m.samples == "request" and not m.client]


# what NVML measures (load.monitor's names) -> the figures it gives; a reason NVML could not is kept
# with each figure
NVML_FIGURES = {
    "gpu_memory": ("peak_gpu_memory_gb",),
    "energy": ("energy_per_output_token_j", "energy_per_request_j"),
}
LOOP_LAG = metric("loop_lag")


@dataclass(slots=True)
class PointResult:
    point: LoadPoint
    runs: list[LoadRun]
    summary: Summary
    verdict: PointVerdict
    client: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    confidence: dict[str, str] = field(default_factory=dict)
    per_run: list[dict[str, Any]] = field(default_factory=list)
    # the server's own figures and the cross-check; None: not scraped
    server: dict[str, Any] | None = None
    per_slice: list[dict[str, Any]] = field(
        default_factory=list
    )  # each slice's figures, when runs were measured in slices

    def figures(self) -> dict[str, Any]:
        return {**self.summary.figures(), **self.resources}

    def record(self, **context: Any) -> dict[str, Any]:
        """The JSON entry for ``SessionResults.slo`` (the shape ``results.views.slo_points``
        reads).
        """
        spec = self.point.load_spec()
        entry = {
            **context,
            "load_point": self.point.id,
            "concurrency": spec.concurrency if spec.mode == "closed" else None,
            "rate": spec.rate,
            "verdict": self.verdict.status,
            "failures": [
                *(f"measurement invalid: {r}" for r in self.verdict.invalid),
                *(str(c) for c in self.verdict.failures),
            ],
            "checks": self.verdict.to_dict()["checks"],
            "thresholds": self.point.thresholds,
            "metrics": {
                k: v
                for k, v in self.figures().items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)
            },
            "figures": self.figures(),
            "samples": {
                m.figure(): [round(x, 3) for x in self.summary.samples.get(m, [])]
                for m in sampled()
            },
            "client": self.client,
            "confidence": self.confidence,
            **self.runs[0].describe(),
            "repeat": len(self.runs),
        }
        if len(self.runs) > 1:
            entry["runs"] = self.per_run
        if self.per_slice:
            entry["slices"] = self.per_slice
        if self.server is not None:
            entry["server"] = self.server
        return entry

    def table(self) -> str:
        """The figures and checks as text, for the test report."""
        lines = [f"load point {self.point.id}: {self.verdict.status.upper()}"]
        lines += [f"  measurement invalid: {r}" for r in self.verdict.invalid]
        lines += [f"  {c}" for c in self.verdict.checks]
        if self.point.not_set:
            lines.append(f"  NOT SET for this engine (not judged): {', '.join(self.point.not_set)}")
        f = self.figures()
        listed = [figure.name for figure in listed_figures()]
        lines.append("  figures: " + ", ".join(f"{k}={f[k]}" for k in listed if k in f))
        lines.append("  client: " + ", ".join(f"{k}={v}" for k, v in self.client.items()))
        lines += [f"  {k}: {v}" for k, v in self.confidence.items()]
        if self.server is not None:
            lines.append("  server: " + server_line(self.server))
        return "\n".join(lines)


def server_line(server: dict[str, Any]) -> str:
    """The server's figures beside the client's, one line."""
    if "error" in server:
        return f"not read ({server['error']})"
    client = server.get("check", {}).get("client", {})
    parts = [
        f"{k} {server[k]} (client {client[k]})" if k in client else f"{k} {server[k]}"
        for k in ("requests", "prompt_tokens", "output_tokens")
        if k in server
    ]
    ttft = server.get("ttft") or {}
    if ttft.get("count"):
        bounds = ", ".join(
            f"{q} <= {ttft[f'{q}_at_most_ms']:g} ms"
            for q in ("p50", "p99")
            if ttft.get(f"{q}_at_most_ms") is not None
        )
        parts.append(
            f"ttft mean {ttft['mean_ms']:g} ms{', ' + bounds if bounds else ''} (histogram)"
        )
    for key in ("prefix_cache_hit_rate", "preemptions"):
        if key in server:
            parts.append(f"{key} {server[key]}")
    if server.get("under_load"):
        parts.append(
            "under load " + ", ".join(f"{k} {v:g}" for k, v in server["under_load"].items())
        )
    check = server.get("check") or {}
    parts.append("cross-check " + ("ok" if check.get("ok") else "FAILED"))
    return ", ".join(parts)


def metric_names(adapter: Adapter) -> ServerMetricNames | None:
    """The framework's Prometheus names, from its adapter; None for one without."""
    return adapter.server_metrics


def pooled(figures: list[ServerFigures]) -> ServerFigures:
    """The runs' server figures added up (histograms bucket by bucket); the first error wins."""
    first = figures[0]
    if len(figures) == 1 or any(f.error for f in figures):
        return next((f for f in figures if f.error), first)
    out = ServerFigures(first.names, span_s=sum(f.span_s for f in figures))
    for key in COUNTERS:
        values = [getattr(f, key) for f in figures]
        setattr(out, key, None if None in values else sum(values))
    for key in ("ttft", "itl", "queue"):
        hists = [getattr(f, key) for f in figures]
        if all(h is not None and h.bounds == hists[0].bounds for h in hists):
            setattr(
                out,
                key,
                replace(
                    hists[0],
                    cumulative=[sum(c) for c in zip(*(h.cumulative for h in hists))],
                    count=sum(h.count for h in hists),
                    sum_s=sum(h.sum_s for h in hists),
                ),
            )
    gauges = [f.under_load for f in figures if f.under_load]
    out.under_load = {
        k: max((v for g in gauges if (v := g.get(k)) is not None), default=None)
        for k in (gauges[0] if gauges else {})
    }
    out.counted = {
        k: sum(f.counted[k] for f in figures)
        for k in first.counted
        if all(k in f.counted for f in figures)
    }
    return out


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
    adapter: Adapter
    pid: int | None = None


def evaluate_point(
    point: LoadPoint,
    endpoint: Endpoint,
    *,
    adapter: Adapter,
    rules: ValidityRules | None = None,
    pid: int | None = None,
    calibration: Calibration | None = None,
) -> PointResult:
    return evaluate_interleaved(
        [Subject(point, endpoint, adapter, pid)], rules=rules, calibration=calibration
    )[0]


def evaluate_interleaved(
    subjects: list[Subject],
    *,
    rules: ValidityRules | None = None,
    calibration: Calibration | None = None,
    runner: Callable[..., LoadRun] = run_load,
    slices: int = 1,
) -> list[PointResult]:
    """Measure each subject's load point ``repeat`` times, the subjects taking turns.

    Alternating baseline and candidate (in A B B A order, so neither always runs later) spreads
    the machine's drift over both, which sequential sessions turn into a false difference.
    ``slices`` > 1 cuts each run into that many consecutive parts and alternates part by part: a
    shared machine's speed moves within seconds, so run *i* of each target then spans the same
    stretch of time, and the run-level figures (throughput most) pair far more closely.
    """
    subjects = [replace(s, pid=server_pid(s.endpoint.base_url, s.pid)) for s in subjects]
    plans = [
        (
            replace(s.endpoint, timeout=s.point.timeout_s) if s.point.timeout_s else s.endpoint,
            s.point.load_spec(),
            s.point.workload(s.adapter),
        )
        for s in subjects
    ]
    parts_of = [sliced(spec, slices) for _, spec, _ in plans]
    runs: list[list[LoadRun]] = [[] for _ in subjects]
    slices_of: list[list[LoadRun]] = [[] for _ in subjects]
    names = [metric_names(s.adapter) for s in subjects]
    calibrations = [calibration] * len(subjects)
    order = list(range(len(subjects)))
    turn = 0
    for i in range(max(s.point.repeat for s in subjects)):
        parts: list[list[LoadRun]] = [[] for _ in subjects]
        for j in range(max(len(specs) for specs in parts_of)):
            for k in order if turn % 2 == 0 else reversed(order):
                endpoint, _, workload = plans[k]
                specs = parts_of[k]
                if i < subjects[k].point.repeat and j < len(specs):
                    run = runner(
                        endpoint,
                        specs[j],
                        workload,
                        server_pid=subjects[k].pid,
                        calibration=calibrations[k],
                        seed=i * len(specs) + j,
                        server_metrics=names[k],
                    )
                    calibrations[k] = run.calibration
                    parts[k].append(run)
            turn += 1
        for k, part in enumerate(parts):
            if part:
                runs[k].append(joined(part, plans[k][1]))
                slices_of[k] += part
    return [
        _judged(s.point, r, s.pid, rules, slices=p if len(p) > len(r) else [])
        for s, r, p in zip(subjects, runs, slices_of)
    ]


def sliced(spec: LoadSpec, slices: int) -> list[LoadSpec]:
    """One run's load as ``slices`` consecutive parts of its requests (or duration); a replay, one
    trace, stays whole.

    The first part warms up as the run would; the others re-fill the streams (one request each, at
    most the run's warm-up) after the pause the other targets' turns made.
    """
    if slices <= 1 or spec.mode == "replay":
        return [spec]
    n = min(slices, spec.requests) if spec.requests else slices
    rewarm = min(spec.warmup_requests, spec.concurrency)
    return [
        replace(
            spec,
            requests=spec.requests // n + (j < spec.requests % n) if spec.requests else None,
            duration_s=spec.duration_s / n if spec.duration_s else None,
            warmup_requests=spec.warmup_requests if j == 0 else rewarm,
        )
        for j in range(n)
    ]


def joined(parts: list[LoadRun], spec: LoadSpec) -> LoadRun:
    """A run measured in slices, as one run: the traces numbered in order, the window the slices'
    windows added up (the other targets' turns between them are no time of this run), the client's
    usage weighed by window, the peaks the highest, the server's counters added up."""
    if len(parts) == 1:
        return parts[0]
    traces = [t for part in parts for t in part.traces]
    for i, trace in enumerate(traces):
        trace.index = i
    spans = [part.window_end_ns - part.window_start_ns for part in parts]
    total = sum(spans) or 1
    waits = [w for part in parts if (w := part.client.wait_share) is not None]
    client = ClientUsage(
        total / 1e9,
        sum(part.client.cpu_share * span for part, span in zip(parts, spans)) / total,
        sum(x * span for x, span in zip(waits, spans)) / total
        if len(waits) == len(parts)
        else None,
    )
    scraped = [part.server for part in parts if part.server is not None]
    start = parts[0].window_start_ns
    return LoadRun(
        spec=spec,
        workload=parts[0].workload,
        traces=traces,
        window_start_ns=start,
        window_end_ns=start + sum(spans),
        loop_lag_ms=[x for part in parts for x in part.loop_lag_ms],
        client=client,
        resources=_peak(parts),
        calibration=parts[-1].calibration,
        server=pooled(scraped) if len(scraped) == len(parts) else None,
    )


def _peak(runs: list[LoadRun]) -> ResourcePeak:
    """The highest server memory any of ``runs`` saw (GPU memory per GPU)."""
    rss = [run.resources.rss_bytes for run in runs if run.resources.rss_bytes is not None]
    gpus = [run.resources.gpu_memory_bytes for run in runs if run.resources.gpu_memory_bytes]
    energy = [run.resources.energy_mj for run in runs]
    return ResourcePeak(
        max(rss) if rss else None,
        [max(col) for col in zip(*gpus)] if gpus else [],
        sum(run.resources.samples for run in runs),
        [sum(col) for col in zip(*energy)] if all(e is not None for e in energy) else None,
        {k: v for run in runs for k, v in run.resources.not_measured.items()},
    )


def _resources(peak: ResourcePeak, summary: Summary, pid: int | None) -> dict[str, Any]:
    """The server's resource figures of a point: memory peaks, GPU energy per output token and per
    request, and, under ``not_measured``, why NVML gave none of a figure (no pynvml, no driver, no
    energy counter)."""
    shown = peak.to_dict()
    energy = peak.energy_j
    resources: dict[str, Any] = {
        "server_pid": pid,
        "peak_rss_gb": shown["peak_rss_gb"],
        "peak_gpu_memory_gb": shown["peak_gpu_memory_gb"],
        "energy_per_output_token_j": None
        if energy is None or not summary.output_tokens
        else round(energy / summary.output_tokens, 6),
        "energy_per_request_j": None
        if energy is None or not summary.ok
        else round(energy / summary.ok, 4),
    }
    why = {
        figure: reason
        for what, reason in peak.not_measured.items()
        for figure in NVML_FIGURES.get(what, ())
    }
    if energy is not None and not summary.output_tokens:
        why.update(
            dict.fromkeys(
                NVML_FIGURES["energy"], "no successful measured request to divide the energy by"
            )
        )
    if why:
        resources["not_measured"] = why
    return resources


def _figures(run: LoadRun, limits: dict[Metric, float]) -> dict[str, float]:
    summary = summarize(run.traces, run.window_start_ns, run.window_end_ns, limits)
    energy = {
        k: v
        for k, v in _resources(run.resources, summary, None).items()
        if k in NVML_FIGURES["energy"]
    }
    figures = {**summary.figures(), **energy}
    return {
        k: v for k, v in figures.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def _judged(
    point: LoadPoint,
    runs: list[LoadRun],
    pid: int | None,
    rules: ValidityRules | None,
    slices: Sequence[LoadRun] = (),
) -> PointResult:
    """The point's verdict over its runs pooled; each run's figures (and each slice's, measured in
    slices) for the gate's paired tests."""
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
    resources = _resources(_peak(runs), summary, pid)
    invalid = validity(
        summary,
        point.thresholds,
        client_busy=busy,
        client_cpu=worst.cpu_share,
        client_wait=worst.wait_share,
        loop_lag_ms=lag,
        rules=rules,
    )
    server: dict[str, Any] | None = None
    scraped = [run.server for run in runs if run.server is not None]
    if scraped:
        seen = pooled(scraped)
        server = seen.to_dict()
        # figures of the point, so thresholds, the gate and the history take them
        resources.update(seen.figures())
        if "prefix_cache_hit_rate" in server:
            resources["prefix_cache_hit_share"] = server["prefix_cache_hit_rate"]
        checks = [cross_check(run.server, run.traces) for run in runs if run.server is not None]
        problems = [
            f"run {i + 1}: {p}" if len(checks) > 1 else p
            for i, c in enumerate(checks)
            for p in c.problems
        ]
        server["check"] = {**checks[0].to_dict(), "problems": problems, "ok": not problems}
        if len(checks) > 1:
            server["check"]["client"] = {
                k: sum(c.client.get(k, 0) for c in checks) for k in checks[0].client
            }
        invalid += problems
    verdict = judge(summary, point.thresholds, resources, invalid)
    confidence: dict[str, str] = {}
    per_run = [_figures(run, limits) for run in runs] if len(runs) > 1 else []
    if per_run:
        for figure in confidence_figures():
            values = [f[figure.name] for f in per_run if figure.name in f]
            if len(values) == len(runs):
                confidence[figure.name] = str(confidence_interval(values))
    return PointResult(
        point,
        runs,
        summary,
        verdict,
        client,
        resources,
        confidence,
        per_run,
        server,
        [_figures(part, limits) for part in slices],
    )
