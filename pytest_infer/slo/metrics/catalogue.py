"""The one list of SLO metrics: name, unit, which direction is better, aliases, headline figures, thresholds.

Everything that names a metric (the summary, the judge, profile thresholds, the
gate's rules, the reports and exports) looks it up here, so that a name means
one thing everywhere. Names already stored in results files keep working: other
spellings of a metric (``output_tps``, ``throughput``) are its aliases.

A figure name is a metric's name or alias, then for a per-request metric
optionally a statistic (``_p99``, ``_p99.9`` or ``_p99_9``, ``_mean``, ``_n``
for the sample count), then optionally a unit (``_ms``): ``ttft_ms`` (the
per-request samples), ``ttft_p99``, ``ttft_p99_ms``. Names are case-insensitive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from ...outcomes import InferError

HIGHER, LOWER = "higher", "lower"
PLAIN = ""  # the statistic of a figure that is the metric itself (a rate, a count, the per-request samples)
SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
# units a figure name may end in, by what they measure; a metric's name carries its unit when it is one of these
SUFFIX_UNITS = {
    "us": "time",
    "ms": "time",
    "s": "time",
    "gb": "memory",
    "gib": "memory",
    "mib": "memory",
    "j": "energy",
}
_STAT = re.compile(r"_(?:p(?P<q>\d+(?:[._]\d+)?)|(?P<word>mean|n))$")
_PERCENTILE_THRESHOLD = re.compile(r"^(?P<name>[a-z0-9_]+?)_p(?P<q>\d+(?:\.\d+)?)_(?P<unit>[a-z]+)$")
V = TypeVar("V")
ENERGY_NEEDS = (
    "NVML's total energy counter (pip install 'pytest-infer[gpu]'; a Volta or newer NVIDIA GPU on this machine)"
)


class UnknownMetric(InferError, ValueError):
    """A threshold key, or a name, that the catalogue does not know; the message lists what is valid."""


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    unit: str  # "ms", "gb", "tokens/s", "requests/s", "share", ...; a SUFFIX_UNITS unit ends the stored figure's name
    better: str | None  # HIGHER, LOWER, or None: a figure that describes the load, not the server's performance
    description: str
    aliases: tuple[str, ...] = ()
    samples: str | None = (
        None  # per-request metrics: what one sample is ("request", "event", "tick"); None: one figure per load point
    )
    headline: tuple[str, ...] = ()  # the statistics of it a summary shows (PLAIN: the figure itself)
    threshold: str | None = None  # the profile threshold key that bounds it ("ttft_p<q>_ms": a percentile of it)
    goodput: bool = False  # its p99 threshold is also the per-request limit goodput counts against
    client: bool = False  # measures the load client, not the server: validity judges it, thresholds do not
    needs: str = ""  # what measuring it takes beyond the load run, named when a threshold's figure was not measured

    def figure(self, stat: str = PLAIN) -> str:
        """The name the suite stores a figure of this metric under: ``figure("p99")`` -> ``ttft_p99_ms``."""
        name = f"{self.name}_{stat}" if stat else self.name
        return name if stat == "n" or self.unit not in SUFFIX_UNITS else f"{name}_{self.unit}"


def _per_request(
    name: str,
    description: str,
    *,
    samples: str = "request",
    headline: tuple[str, ...] = (),
    goodput: bool = False,
    client: bool = False,
) -> Metric:
    return Metric(
        name,
        "ms",
        LOWER,
        description,
        samples=samples,
        headline=headline,
        goodput=goodput,
        client=client,
        threshold=None if client else f"{name}_p<q>_ms",
    )


# Order matters: it is the order of a summary's headline figures and of the threshold keys an error lists.
CATALOGUE: tuple[Metric, ...] = (
    _per_request(
        "ttft", "time to first token: send to the first event carrying output", headline=("p50", "p99"), goodput=True
    ),
    _per_request("ttfb", "time to first byte: send to the first byte of the body (a role-only chunk counts)"),
    _per_request(
        "tpot",
        "time per output token after the first: (E2E - TTFT) / (output tokens - 1)",
        headline=("p99",),
        goodput=True,
    ),
    _per_request(
        "itl", "inter-token latency: the gap between successive output events", samples="event", headline=("p99",)
    ),
    _per_request(
        "itl_token", "inter-token latency per token: an event of k tokens gives k gaps of gap/k", samples="event"
    ),
    _per_request("e2e", "end to end: send to [DONE] (or the end of the body)", headline=("p99",), goodput=True),
    _per_request(
        "schedule_lag", "the client's actual send time minus the one its arrival schedule intended", client=True
    ),
    _per_request("loop_lag", "how late the client's event loop ran a periodic tick", samples="tick", client=True),
    Metric(
        "output_tokens_per_s",
        "tokens/s",
        HIGHER,
        "output tokens of the successful measured requests per second of the window",
        aliases=("output_tps", "tps", "throughput", "output_throughput"),
        headline=(PLAIN,),
        threshold="min_output_tokens_per_s",
    ),
    Metric(
        "requests_per_s",
        "requests/s",
        HIGHER,
        "successful measured requests per second of the window",
        aliases=("rps", "qps", "request_throughput"),
        threshold="min_requests_per_s",
    ),
    Metric(
        "goodput_rps",
        "requests/s",
        HIGHER,
        "measured requests that met every per-request limit, per second of the window",
        aliases=("goodput",),
        headline=(PLAIN,),
    ),
    Metric(
        "attainment",
        "share",
        HIGHER,
        "share of the measured requests that met every per-request limit",
        aliases=("goodput_share",),
        threshold="min_goodput_share",
    ),
    Metric("error_share", "share", LOWER, "share of the measured requests that failed", threshold="max_error_share"),
    Metric(
        "peak_rss",
        "gb",
        LOWER,
        "peak resident memory of the server's process tree (GiB)",
        aliases=("rss",),
        threshold="max_rss_gb",
        needs=(
            "the server's process on this machine to watch (one the plugin launched, or one listening on the endpoint's"
            " port here)"
        ),
    ),
    Metric(
        "peak_gpu_memory",
        "gb",
        LOWER,
        "peak memory used per GPU (GiB, NVML); a threshold judges the fullest GPU",
        aliases=("gpu_memory",),
        threshold="max_gpu_memory_gb",
        needs="NVML (pip install 'pytest-infer[gpu]') and a GPU on this machine",
    ),
    Metric(
        "energy_per_output_token",
        "j",
        LOWER,
        "GPU energy over the measured window (all GPUs, NVML's total energy counter) "
        "per output token of the successful measured requests (joules)",
        aliases=("joules_per_token", "j_per_token"),
        threshold="max_energy_per_output_token_j",
        needs=ENERGY_NEEDS,
    ),
    Metric(
        "energy_per_request",
        "j",
        LOWER,
        "GPU energy over the measured window per successful measured request (joules)",
        aliases=("joules_per_request",),
        threshold="max_energy_per_request_j",
        needs=ENERGY_NEEDS,
    ),
    Metric(
        "capacity_rps",
        "requests/s",
        HIGHER,
        "capacity search: the highest offered request rate at which every threshold of the point held",
        aliases=("capacity",),
        threshold="min_capacity_rps",
    ),
    Metric(
        "capacity_concurrency",
        "streams",
        HIGHER,
        "capacity search: the highest concurrency at which every threshold of the point held",
        threshold="min_capacity_concurrency",
    ),
    Metric(
        "prefix_cache_hit_share",
        "share",
        HIGHER,
        "the server's prefix-cache hits over its lookups during the load point (its /metrics)",
        aliases=("prefix_cache_hit_rate", "cache_hit_share"),
    ),
    Metric("ok", "requests", HIGHER, "measured requests that succeeded"),
    Metric("failed", "requests", LOWER, "measured requests that failed"),
    Metric(
        "token_mismatches",
        "requests",
        LOWER,
        "requests whose usage count differs from the client's count by more than 2%",
    ),
    Metric("streams_without_done", "requests", LOWER, "streams that ended without [DONE]"),
    Metric("requests", "requests", None, "measured requests (warm-up and cool-down excluded)"),
    Metric("window", "s", None, "the measurement window: first measured send to last measured end"),
    Metric("output_tokens", "tokens", None, "output tokens of the successful measured requests"),
    Metric("one_token_outputs", "requests", None, "successful requests with one output token (they have no TPOT)"),
    Metric("prompt_tokens_mean", "tokens", None, "mean prompt length the server reported"),
    Metric("output_tokens_mean", "tokens", None, "mean output length of the successful requests"),
    Metric("server_pid", "pid", None, "process id of the server whose memory was sampled"),
)


def _index(catalogue: tuple[Metric, ...]) -> dict[str, Metric]:
    """Every name and alias -> its metric; refuses a name given twice and a bound on the wrong side."""
    index: dict[str, Metric] = {}
    for m in catalogue:
        for name in (m.name, *m.aliases):
            if name in index:
                raise ValueError(f"metric name {name!r} is given twice")
            index[name] = m
        if m.threshold and not m.samples and not m.threshold.startswith("min_" if m.better == HIGHER else "max_"):
            raise ValueError(f"{m.name}: a {m.better}-is-better metric's threshold cannot be {m.threshold!r}")
    return index


_BY_NAME = _index(CATALOGUE)
_BY_THRESHOLD = {m.threshold: m for m in CATALOGUE if m.threshold and not m.samples}
PER_REQUEST = tuple(m for m in CATALOGUE if m.samples)
HEADLINE = tuple((m, stat) for m in CATALOGUE for stat in m.headline)


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of a metric, as a name spelled it."""

    metric: Metric
    stat: str = PLAIN  # PLAIN, "p99", "p99.9", "mean" or "n"
    unit: str = ""  # of the value under this name: the unit it was spelled with, else the metric's ("samples" for _n)

    @property
    def name(self) -> str:
        """The suite's own spelling of this figure (in the metric's unit)."""
        return self.metric.figure(self.stat)

    @property
    def better(self) -> str | None:
        return None if self.stat == "n" else self.metric.better

    @property
    def percentile(self) -> float | None:
        return float(self.stat[1:]) if self.stat.startswith("p") else None

    def same(self, other: Figure) -> bool:
        """The same metric and statistic, whatever the spelling."""
        return self.metric is other.metric and self.stat == other.stat


@dataclass(frozen=True, slots=True)
class Bound:
    """What a profile threshold key bounds, and from which side."""

    key: str
    figure: Figure
    kind: str  # "max": the figure must not exceed the limit; "min": it must not fall below it

    @property
    def op(self) -> str:
        return "<=" if self.kind == "max" else ">="

    def holds(self, value: float, limit: float) -> bool:
        return value <= limit if self.kind == "max" else value >= limit


def split_unit(name: str) -> tuple[str, str]:
    """``ttft_p99_ms`` -> (``ttft_p99``, ``ms``); a name without a known unit suffix -> (name, "")."""
    stem, _, suffix = name.lower().rpartition("_")
    return (stem, suffix) if stem and suffix in SUFFIX_UNITS else (name.lower(), "")


def metric(name: str) -> Metric:
    """A metric by its name or an alias (no statistic, no unit); raises UnknownMetric."""
    try:
        return _BY_NAME[name.lower()]
    except KeyError:
        raise UnknownMetric(f"unknown metric {name!r}; known: {', '.join(m.name for m in CATALOGUE)}") from None


@lru_cache(maxsize=4096)
def resolve(name: str) -> Figure | None:
    """The figure a name means (``output_tps`` and ``output_tokens_per_s`` are one), or None when it is not a known
    metric's."""
    text = name.lower()
    if text in _BY_NAME:
        return Figure(_BY_NAME[text], PLAIN, _BY_NAME[text].unit)
    stem, unit = split_unit(text)
    stat = PLAIN
    if stem not in _BY_NAME and (match := _STAT.search(stem)):
        stem = stem[: match.start()]
        stat = match["word"] or f"p{float(match['q'].replace('_', '.')):g}"
    found = _BY_NAME.get(stem)
    if found is None or (stat and not found.samples) or (unit and SUFFIX_UNITS[unit] != SUFFIX_UNITS.get(found.unit)):
        return None
    if stat == "n":
        return None if unit else Figure(found, stat, "samples")
    return Figure(found, stat, unit or found.unit)


def direction(name: str) -> str | None:
    """HIGHER or LOWER when a change of this figure is good or bad; None for a count of the load, a sample count, or an
    unknown name."""
    figure = resolve(name)
    return figure.better if figure else None


def higher_is_better(name: str) -> bool:
    """A fall is the bad direction (throughput, goodput); for everything else, unknown names included, a rise is."""
    return direction(name) == HIGHER


def unit(name: str) -> str | None:
    """The unit of the value under this name: the known metric's, else a unit suffix the name ends in, else None."""
    figure = resolve(name)
    if figure is not None:
        return figure.unit
    return split_unit(name)[1] or None


def to_seconds(name: str, value: float) -> float | None:
    """A time figure in seconds (``ttft_p99_ms``: value / 1000); None for a figure that is not a time."""
    factor = SECONDS.get(unit(name) or "")
    return None if factor is None else value * factor


def find(figures: Mapping[str, V], *wanted: str) -> tuple[str, V] | None:
    """The first of ``wanted`` that ``figures`` holds under any spelling, as (the name it is stored under, its
    value)."""
    for want in wanted:
        target = resolve(want)
        for name, value in figures.items():
            if name == want or (target is not None and (seen := resolve(name)) is not None and seen.same(target)):
                return name, value
    return None


def headline(figures: Mapping[str, V]) -> dict[str, V]:
    """The figures a summary shows, in the catalogue's order, each under the name it is stored under."""
    shown: dict[str, V] = {}
    for m, stat in HEADLINE:
        if found := find(figures, m.figure(stat)):
            shown[found[0]] = found[1]
    return shown


def samples_of(name: str) -> list[str]:
    """The names per-request samples of a statistic may be stored under: ``ttft_p99_ms`` -> ``ttft_ms``, ``ttft``."""
    figure = resolve(name)
    if figure is None or not figure.stat or figure.better is None:  # a sample count is not tested
        return []
    return [figure.metric.figure(), figure.metric.name]


def threshold_keys() -> list[str]:
    """Every key a profile's ``thresholds`` may use (for error messages)."""
    return [m.threshold for m in CATALOGUE if m.threshold]


def threshold(key: str) -> Bound:
    """What a profile threshold key bounds: ``ttft_p99_ms`` -> max of TTFT's p99, ``min_goodput_share`` -> min of
    attainment.

    Keys are spelled exactly as ``threshold_keys`` lists them; raises UnknownMetric, saying why, otherwise.
    """
    if key in _BY_THRESHOLD:
        found = _BY_THRESHOLD[key]
        return Bound(key, Figure(found, PLAIN, found.unit), "max" if found.better == LOWER else "min")
    match = _PERCENTILE_THRESHOLD.match(key)
    m = _BY_NAME.get(match["name"]) if match else None
    if (
        match is None
        or m is None
        or m.name != match["name"]
        or m.threshold is None
        or not m.samples
        or match["unit"] != m.unit
    ):
        raise UnknownMetric(f"unknown threshold {key!r}; valid: {', '.join(threshold_keys())}")
    q = float(match["q"])
    if not 0 < q < 100:
        raise UnknownMetric(f"threshold {key!r}: the percentile must be between 0 and 100")
    return Bound(key, Figure(m, f"p{q:g}", m.unit), "max")


def check_threshold_key(key: str) -> str | None:
    """None if ``key`` is a valid threshold key, else why not."""
    try:
        threshold(key)
    except UnknownMetric as exc:
        return str(exc)
    return None
