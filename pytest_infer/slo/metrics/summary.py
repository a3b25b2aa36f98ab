"""One load point's figures: distributions of the per-request metrics, throughput, goodput.

Only measured requests count (warm-up and cool-down are excluded from every
figure). Throughput is the measured requests' output tokens (and requests)
divided by the measurement window (first measured send to last measured end).
Goodput is the rate of measured requests that met every per-request limit of
their load point; attainment is their share (a failed request never meets them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...load.trace import RequestTrace
from .catalogue import PER_REQUEST
from .definitions import RequestMetrics, request_metrics
from .stats import PERCENTILE_METHOD, InsufficientSamples, percentile

# the per-request metrics measured from the traces (the loop lag comes from the load run)
METRICS = tuple(m for m in PER_REQUEST if m.samples in ("request", "event"))
REPORTED_PERCENTILES = (50, 90, 99)


def meets(m: RequestMetrics, limits: Mapping[str, float]) -> bool:
    """A request met its SLO: it succeeded and every limit it has a value for holds.

    ``limits`` are keyed by per-request sample name (``ttft_ms``), which is also the RequestMetrics attribute.
    """
    if not m.ok:
        return False
    for name, limit in limits.items():
        value = getattr(m, name)
        if value is not None and value > limit:
            return False
    return True


@dataclass(slots=True)
class Summary:
    requests: int
    ok: int
    window_s: float
    output_tokens: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    met: int = 0
    one_token_outputs: int = 0
    token_mismatches: int = 0
    no_done: int = 0
    prompt_tokens_mean: float | None = None
    output_tokens_mean: float | None = None
    errors: list[str] = field(default_factory=list)
    limits: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.requests - self.ok

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.window_s if self.window_s > 0 else 0.0

    @property
    def requests_per_s(self) -> float:
        return self.ok / self.window_s if self.window_s > 0 else 0.0

    @property
    def goodput_rps(self) -> float:
        return self.met / self.window_s if self.window_s > 0 else 0.0

    @property
    def attainment(self) -> float:
        return self.met / self.requests if self.requests else 0.0

    @property
    def error_share(self) -> float:
        return self.failed / self.requests if self.requests else 1.0

    def value(self, metric: str, q: float) -> float:
        """The q-th percentile of a metric in ms; raises InsufficientSamples."""
        return percentile(self.samples.get(metric, []), q)

    def figures(self) -> dict[str, Any]:
        """Flat, JSON-ready figures for the results and the report, named as the catalogue names them."""
        out: dict[str, Any] = {
            "requests": self.requests,
            "ok": self.ok,
            "failed": self.failed,
            "window_s": round(self.window_s, 3),
            "output_tokens": self.output_tokens,
            "output_tokens_per_s": round(self.output_tokens_per_s, 2),
            "requests_per_s": round(self.requests_per_s, 3),
            "goodput_rps": round(self.goodput_rps, 3),
            "attainment": round(self.attainment, 4),
            "error_share": round(self.error_share, 4),
            "one_token_outputs": self.one_token_outputs,
            "token_mismatches": self.token_mismatches,
            "streams_without_done": self.no_done,
            "prompt_tokens_mean": self.prompt_tokens_mean,
            "output_tokens_mean": self.output_tokens_mean,
            "percentile_method": PERCENTILE_METHOD,
        }
        for metric in METRICS:
            values = self.samples.get(metric.name, [])
            if not values:
                continue
            out[metric.figure("n")] = len(values)
            out[metric.figure("mean")] = round(sum(values) / len(values), 3)
            for q in REPORTED_PERCENTILES:
                try:
                    out[metric.figure(f"p{q}")] = round(percentile(values, q), 3)
                except InsufficientSamples:
                    out[metric.figure(f"p{q}")] = "insufficient samples"
        if self.errors:
            out["errors"] = self.errors
        return out


def summarize(
    traces: Sequence[RequestTrace], window_start_ns: int, window_end_ns: int, limits: Mapping[str, float] | None = None
) -> Summary:
    measured = [t for t in traces if t.phase == "measured"]
    metrics = [request_metrics(t) for t in measured]
    ok = [m for m in metrics if m.ok]
    limits = dict(limits or {})
    summary = Summary(
        requests=len(measured),
        ok=len(ok),
        window_s=(window_end_ns - window_start_ns) / 1e9,
        output_tokens=sum(m.output_tokens for m in ok),
        limits=limits,
    )
    samples: dict[str, list[float]] = {m.name: [] for m in METRICS}
    for m in metrics:
        if m.schedule_lag_ms is not None:
            samples["schedule_lag"].append(m.schedule_lag_ms)
        if not m.ok:
            if m.error and m.error not in summary.errors and len(summary.errors) < 5:
                summary.errors.append(m.error[:300])
            continue
        samples["ttft"].append(m.ttft_ms)  # type: ignore[arg-type]
        samples["e2e"].append(m.e2e_ms)  # type: ignore[arg-type]
        if m.ttfb_ms is not None:
            samples["ttfb"].append(m.ttfb_ms)
        samples["itl"].extend(m.itl_event_ms)
        samples["itl_token"].extend(m.itl_token_ms)
        if m.tpot_ms is None:
            summary.one_token_outputs += 1
        else:
            samples["tpot"].append(m.tpot_ms)
        summary.token_mismatches += m.token_mismatch
        summary.no_done += not m.done
        summary.met += meets(m, limits)
    summary.samples = samples
    prompts = [t.usage_prompt_tokens for t in measured if t.usage_prompt_tokens is not None]
    summary.prompt_tokens_mean = round(sum(prompts) / len(prompts), 1) if prompts else None
    summary.output_tokens_mean = round(summary.output_tokens / len(ok), 1) if ok else None
    return summary
