"""One load point's figures: distributions of the per-request metrics, throughput, goodput.

Only measured requests count (warm-up and cool-down are excluded from every
figure). Throughput is the measured requests' output tokens (and requests)
divided by the measurement window (first measured send to last measured end).
Goodput is the rate of measured requests that met every per-request limit of
their load point; attainment is their share (a failed request never meets them).
What each figure is, and how it is computed, is its catalogue entry's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...load.trace import RequestTrace
from .catalogue import CATALOGUE, Figure, Metric, in_figure_order
from .definitions import RequestMetrics, request_metrics
from .stats import PERCENTILE_METHOD, InsufficientSamples, percentile

MAX_ERRORS = 5  # distinct errors a summary keeps, each cut to ERROR_CHARS
ERROR_CHARS = 300


def meets(m: RequestMetrics, limits: Mapping[Metric, float]) -> bool:
    """A request met its SLO: it succeeded and each of its samples of a limited metric is within the
    limit.
    """
    return m.ok and all(
        x <= limit
        for metric, limit in limits.items()
        if metric.per_request
        for x in metric.per_request(m)
    )


@dataclass(slots=True)
class Summary:
    measured: list[RequestMetrics]  # the measured requests', in order
    window_s: float
    # per-request limits goodput counts against
    limits: dict[Metric, float] = field(default_factory=dict)
    # each per-request metric's samples
    samples: dict[Metric, list[float]] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        return len(self.measured)

    @property
    def ok(self) -> int:
        return sum(m.ok for m in self.measured)

    @property
    def failed(self) -> int:
        return self.requests - self.ok

    @property
    def output_tokens(self) -> int:
        return sum(m.output_tokens for m in self.measured if m.ok)

    @property
    def met(self) -> int:
        return sum(meets(m, self.limits) for m in self.measured)

    @property
    def errors(self) -> list[str]:
        """The first few distinct errors of the failed requests."""
        errors: list[str] = []
        for m in self.measured:
            if not m.ok and m.error and m.error not in errors and len(errors) < MAX_ERRORS:
                errors.append(m.error[:ERROR_CHARS])
        return errors

    def value(self, figure: Figure) -> Any:
        """A figure, unrounded: a statistic of a per-request metric's samples (the samples
        themselves for PLAIN), or a load point's value; None where the summary does not compute it,
        or has no samples to average. Raises InsufficientSamples for a percentile of too few
        samples."""
        m = figure.metric
        if m.per_point is not None:
            return m.per_point(self)
        if m.per_request is None:
            return None
        values = self.samples.get(m, [])
        if figure.percentile is not None:
            return percentile(values, figure.percentile)
        if figure.stat == "n":
            return len(values)
        if figure.stat == "mean":
            return sum(values) / len(values) if values else None
        return values

    def values(self) -> dict[Figure, Any]:
        """The figures the catalogue has a summary store, rounded as its entries say: the load
        point's, then each measured distribution's (a percentile its samples cannot support is
        ``insufficient samples``)."""
        out: dict[Figure, Any] = {}
        for m in in_figure_order():
            # measured beside the load run, or not at all
            if m.per_point is None and not self.samples.get(m):
                continue
            for stat in m.statistics:
                figure = m.at(stat)
                try:
                    value = self.value(figure)
                except InsufficientSamples:
                    value = "insufficient samples"
                if m.digits is not None and isinstance(value, float):
                    value = round(value, m.digits)
                out[figure] = value
        return out

    def figures(self) -> dict[str, Any]:
        """Flat, JSON-ready figures for the results and the report, named as the catalogue names
        them.
        """
        values = self.values()
        out: dict[str, Any] = {
            **{f.name: v for f, v in values.items() if not f.metric.samples},
            "percentile_method": PERCENTILE_METHOD,
            **{f.name: v for f, v in values.items() if f.metric.samples},
        }
        if errors := self.errors:
            out["errors"] = errors
        return out


def summarize(
    traces: Sequence[RequestTrace],
    window_start_ns: int,
    window_end_ns: int,
    limits: Mapping[Metric, float] | None = None,
) -> Summary:
    measured = [request_metrics(t) for t in traces if t.phase == "measured"]
    samples = {
        m: [x for r in measured for x in m.per_request(r)]
        for m in CATALOGUE
        if m.per_request is not None
    }
    return Summary(measured, (window_end_ns - window_start_ns) / 1e9, dict(limits or {}), samples)
