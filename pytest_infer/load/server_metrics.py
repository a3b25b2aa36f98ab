"""The server's own Prometheus metrics, scraped around a load run: a second witness beside the
client.

A load run scrapes ``/metrics`` three times, none inside the measured window:
before the first (warm-up) request, once at the window's end while the cool-down
requests still hold the load (the gauges: KV-cache use, running and waiting
requests), and after the drain. The difference of the counters and histograms
between the first and the last scrape covers exactly the run's requests (warm-up,
measured and cool-down), which the client also saw: ``slo.metrics.server_check``
compares the two.

The text is parsed by prometheus_client's ``text_string_to_metric_families``.
Series of one name are summed over their labels (finish reason, engine, model).
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ..adapters.base import ServerMetricNames
from ..client.endpoint import Endpoint

SCRAPE_TIMEOUT_S = 10.0
SETTLE_S = 3.0  # after the drain: how long the counters may take to show the run's last requests
SETTLE_INTERVAL_S = 0.05


class ScrapeError(Exception):
    """The server's metrics could not be read (no route, not Prometheus text)."""


@dataclass(slots=True)
class Snapshot:
    """One scrape: every sample, summed over its labels (buckets kept per ``le``)."""

    at_ns: int
    values: dict[str, float] = field(default_factory=dict)
    buckets: dict[str, dict[float, float]] = field(
        default_factory=dict
    )  # histogram base name -> le -> cumulative count
    # sample name -> its family's type ("counter", "gauge", ...)
    types: dict[str, str] = field(default_factory=dict)

    def value(self, name: str | None) -> float | None:
        return None if name is None else self.values.get(name)


def parse(text: str, at_ns: int = 0) -> Snapshot:
    """A snapshot of Prometheus text; raises ScrapeError when it is not Prometheus text."""
    snap = Snapshot(at_ns)
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith("_bucket") and "le" in sample.labels:
                    le = float(sample.labels["le"])
                    per_le = snap.buckets.setdefault(sample.name.removesuffix("_bucket"), {})
                    per_le[le] = per_le.get(le, 0.0) + sample.value
                else:
                    snap.values[sample.name] = snap.values.get(sample.name, 0.0) + sample.value
                    snap.types[sample.name] = family.type
    except ValueError as exc:
        raise ScrapeError(f"not Prometheus text: {exc}") from exc
    return snap


def scrape(endpoint: Endpoint, path: str) -> Snapshot:
    """GET the metrics route once; raises ScrapeError."""
    try:
        with endpoint.http(timeout=SCRAPE_TIMEOUT_S) as client:
            response = client.get(path)
    except httpx.HTTPError as exc:
        raise ScrapeError(f"GET {path}: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise ScrapeError(f"GET {path}: HTTP {response.status_code}")
    return parse(response.text, time.perf_counter_ns())


@dataclass(slots=True)
class Histogram:
    """The increase of one histogram between two scrapes: cumulative counts per upper bound
    (seconds).
    """

    bounds: list[float]  # ascending, +Inf last
    cumulative: list[float]
    count: float
    sum_s: float

    def at_or_below(self, bound_s: float) -> float:
        """How many observations the histogram puts at or below ``bound_s`` (one of its bounds, or
        below it).
        """
        i = bisect_left(self.bounds, bound_s)
        if i < len(self.bounds) and self.bounds[i] == bound_s:
            return self.cumulative[i]
        return self.cumulative[i - 1] if i > 0 else 0.0

    def quantile_bound_ms(self, q: float) -> float | None:
        """The bound of the bucket that holds the q-th percentile: the percentile is at most this.

        No interpolation (Prometheus' ``histogram_quantile`` interpolates linearly, which in a
        coarse first bucket reports 150 ms for queue times of microseconds); None past the last
        finite bound.
        """
        if self.count <= 0:
            return None
        rank = q / 100 * self.count
        for bound, cum in zip(self.bounds, self.cumulative):
            if cum >= rank:
                return None if math.isinf(bound) else round(bound * 1e3, 3)
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": int(self.count),
            "mean_ms": round(self.sum_s / self.count * 1e3, 3) if self.count else None,
            "p50_at_most_ms": self.quantile_bound_ms(50),
            "p90_at_most_ms": self.quantile_bound_ms(90),
            "p99_at_most_ms": self.quantile_bound_ms(99),
            "buckets": {
                ("+Inf" if math.isinf(b) else f"{b:g}"): int(c)
                for b, c in zip(self.bounds, self.cumulative)
            },
        }


def histogram_delta(before: Snapshot, after: Snapshot, name: str | None) -> Histogram | None:
    if name is None or name not in after.buckets:
        return None
    old, new = before.buckets.get(name, {}), after.buckets[name]
    bounds = sorted(new)
    return Histogram(
        bounds=bounds,
        cumulative=[new[b] - old.get(b, 0.0) for b in bounds],
        count=(after.value(f"{name}_count") or 0.0) - (before.value(f"{name}_count") or 0.0),
        sum_s=(after.value(f"{name}_sum") or 0.0) - (before.value(f"{name}_sum") or 0.0),
    )


@dataclass(slots=True)
class ServerFigures:
    """What the server says happened between two scrapes (counters and histograms as increases)."""

    names: ServerMetricNames
    requests: float | None = None
    prompt_tokens: float | None = None
    output_tokens: float | None = None
    ttft: Histogram | None = None
    itl: Histogram | None = None
    queue: Histogram | None = None
    prefix_cache_hits: float | None = None
    prefix_cache_queries: float | None = None
    preemptions: float | None = None
    under_load: dict[str, float | None] = field(
        default_factory=dict
    )  # gauges at the window's end (cool-down still running)
    # the increase of each counter ``names.figures`` names
    counted: dict[str, float] = field(default_factory=dict)
    span_s: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": f"GET {self.names.path}",
            "names_verified": self.names.verified_on if self.names.verified else False,
            "span": "the load run: before its first warm-up request to after its drain",
            "span_s": round(self.span_s, 3),
        }
        if self.error:
            out["error"] = self.error
            return out
        for key in COUNTERS:
            value = getattr(self, key)
            if value is not None:
                out[key] = int(round(value))
        if self.prefix_cache_queries:
            out["prefix_cache_hit_rate"] = round(
                (self.prefix_cache_hits or 0.0) / self.prefix_cache_queries, 4
            )
        for key in ("ttft", "itl", "queue"):
            hist = getattr(self, key)
            if hist is not None:
                out[key] = hist.to_dict()
        if self.under_load:
            out["under_load"] = {k: v for k, v in self.under_load.items() if v is not None}
        if self.counted:
            out["counted"] = dict(self.counted)
        return out

    def figures(self) -> dict[str, float]:
        """The load point figures ``names.figures`` names, where the server gave them."""
        found = {**{k: v for k, v in self.under_load.items() if v is not None}, **self.counted}
        return {name: found[name] for name in self.names.figures if name in found}


COUNTERS = (
    "requests",
    "prompt_tokens",
    "output_tokens",
    "prefix_cache_hits",
    "prefix_cache_queries",
    "preemptions",
)
GAUGES = ("kv_cache_usage", "running", "waiting")


def figures_between(
    names: ServerMetricNames, before: Snapshot, after: Snapshot, under_load: Snapshot | None = None
) -> ServerFigures:
    out = ServerFigures(names, span_s=(after.at_ns - before.at_ns) / 1e9)
    for key in COUNTERS:
        name = getattr(names, key)
        new, old = after.value(name), before.value(name)
        if new is not None:
            if new < (old or 0.0):
                out.error = (
                    f"{name} went down between the scrapes ({old:g} -> {new:g}): the "
                    "server restarted"
                )
                return out
            setattr(out, key, new - (old or 0.0))
    out.ttft = histogram_delta(before, after, names.ttft)
    out.itl = histogram_delta(before, after, names.itl)
    out.queue = histogram_delta(before, after, names.queue)
    if under_load is not None:
        out.under_load = {key: under_load.value(getattr(names, key)) for key in GAUGES}
    for figure, sample in names.figures.items():
        new = after.value(sample)
        if new is not None and after.types.get(sample) == "counter":
            out.counted[figure] = new - (before.value(sample) or 0.0)
        elif under_load is not None:
            out.under_load[figure] = under_load.value(sample)
    return out


class ServerWatch:
    """The scrapes of one load run. Every method is blocking (run it off the event loop) and never
    raises.
    """

    def __init__(self, endpoint: Endpoint, names: ServerMetricNames) -> None:
        self.endpoint, self.names = endpoint, names
        self.before: Snapshot | None = None
        self.under_load: Snapshot | None = None
        self.after: Snapshot | None = None
        self.error: str | None = None

    def _scrape(self) -> Snapshot | None:
        try:
            return scrape(self.endpoint, self.names.path)
        except ScrapeError as exc:
            self.error = self.error or str(exc)
            return None

    def start(self) -> None:
        self.before = self._scrape()

    def at_window_end(self) -> None:
        if self.before is not None:
            self.under_load = self._scrape()

    def finish(self, requests_sent: int) -> None:
        """The last scrape, once the counters show every request sent (or ``SETTLE_S`` has passed).

        A server may count a request just after its last byte went out, so a scrape right after the
        drain can miss the last ones.
        """
        if self.before is None:
            return
        deadline = time.monotonic() + SETTLE_S
        while True:
            self.after = self._scrape()
            if self.after is None or time.monotonic() > deadline:
                return
            done = self.after.value(self.names.requests)
            running = self.after.value(self.names.running)
            settled = (
                done is None
                or done - (self.before.value(self.names.requests) or 0.0) >= requests_sent
            ) and not running
            if settled:
                return
            time.sleep(SETTLE_INTERVAL_S)

    def figures(self) -> ServerFigures:
        if self.before is None or self.after is None:
            return ServerFigures(self.names, error=self.error or "not scraped")
        return figures_between(self.names, self.before, self.after, self.under_load)
