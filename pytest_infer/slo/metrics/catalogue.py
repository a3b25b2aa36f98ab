"""The one list of SLO metrics: name, unit, which direction is better, aliases, how each is
computed, which of its figures a summary stores and shows, thresholds.

Everything that names a metric (the summary, the judge, profile thresholds, the
gate's rules, the reports and exports) looks it up here, so that a name means
one thing everywhere. A client-side metric is one entry here and the function
that computes it (``per_request`` from one request's metrics, ``per_point`` from
the load point's summary); ``register`` adds one from outside (a plugin, a test).

Inside the suite a figure is a ``Figure`` value (metric, statistic, unit). Its
name exists only where figures leave or enter the suite (results files, profile
thresholds, ``--fail-on`` rules, reports), made by ``Metric.figure`` and read by
``parse``, both here. A figure name is a metric's name or alias, then for a
per-request metric optionally a statistic (``_p99``, ``_p99.9`` or ``_p99_9``,
``_mean``, ``_n`` for the sample count), then optionally a unit (``_ms``):
``ttft_ms`` (the per-request samples), ``ttft_p99``, ``ttft_p99_ms``. Names are
case-insensitive. Names already stored in results files keep working: other
spellings of a metric (``output_tps``, ``throughput``) are its aliases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from ...outcomes import InferError
from .definitions import RequestMetrics

HIGHER, LOWER = "higher", "lower"
# the statistic of a figure that is the metric itself (a rate, a count, the per-request samples)
PLAIN = ""
# what a summary stores of a per-request metric's samples, by default
REPORTED = ("n", "mean", "p50", "p90", "p99")
# per-token figures also store their low percentiles: the fastest tokens, which a machine's
# contention between sessions moves less than a per-token slowdown of the server
# (docs/timing-across-sessions.md)
PER_TOKEN_REPORTED = ("n", "mean", "p5", "p10", "p50", "p90", "p99")
SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
# units a figure name may end in, by what they measure; a metric's name carries its unit when it is
# one of these
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
V = TypeVar("V")
ENERGY_NEEDS = (
    "NVML's total energy counter (pip install 'pytest-infer[gpu]'; a Volta or newer "
    "NVIDIA GPU on this machine)"
)


class Point(Protocol):
    """What a load point's figures are computed from (``summary.Summary``): its measured requests
    and counts.
    """

    @property
    def measured(self) -> Sequence[RequestMetrics]: ...
    @property
    def window_s(self) -> float: ...
    @property
    def requests(self) -> int: ...
    @property
    def ok(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def met(self) -> int: ...


class UnknownMetric(InferError, ValueError):
    """A threshold key, or a name, that the catalogue does not know; the message lists what is
    valid.
    """


@dataclass(frozen=True, slots=True, eq=False)
class Metric:
    """One metric; equal only to itself, so a figure of it is never confused with a namesake's."""

    name: str
    # "ms", "gb", "tokens/s", "requests/s", "share", ...; a SUFFIX_UNITS unit ends the stored
    # figure's name
    unit: str
    # HIGHER, LOWER, or None: a figure that describes the load, not the server's performance
    better: str | None
    description: str
    aliases: tuple[str, ...] = ()
    # per-request metrics: what one sample is ("request", "event", "tick"); None: one figure per
    # load point
    samples: str | None = None
    # the statistics of it a summary shows (PLAIN: the figure itself)
    headline: tuple[str, ...] = ()
    # the profile threshold key that bounds it ("ttft_p<q>_ms": a percentile of it)
    threshold: str | None = None
    goodput: bool = False  # its p99 threshold is also the per-request limit goodput counts against
    # measures the load client, not the server: validity judges it, thresholds do not
    client: bool = False
    # what measuring it takes beyond the load run, named when a threshold's figure was not measured
    needs: str = ""
    # how the summary computes it: one measured request's samples (failed requests included: return
    # none for them where they have no say), or the load point's value from the summary; neither:
    # measured beside the load run
    per_request: Callable[[RequestMetrics], Iterable[float]] | None = None
    per_point: Callable[[Point], float | None] | None = None
    # the statistics of its samples a summary stores (empty: REPORTED)
    reported: tuple[str, ...] = ()
    digits: int | None = None  # the stored figures are rounded to this many decimals
    # statistics given a confidence interval over a point's repeated runs
    confidence: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()  # statistics the load point's text table (the test report) lists

    def figure(self, stat: str = PLAIN) -> str:
        """The name the suite stores a figure of this metric under: ``figure("p99")`` ->
        ``ttft_p99_ms``.
        """
        name = f"{self.name}_{stat}" if stat else self.name
        return name if stat == "n" or self.unit not in SUFFIX_UNITS else f"{name}_{self.unit}"

    def at(self, stat: str = PLAIN) -> Figure:
        """This metric's figure at a statistic, in the metric's unit."""
        return Figure(self, stat, "samples" if stat == "n" else self.unit)

    @property
    def statistics(self) -> tuple[str, ...]:
        """What a summary stores of it: statistics of its samples, or its value."""
        return (self.reported or REPORTED) if self.samples else (PLAIN,)


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of a metric; ``spelling`` keeps the name it was read under, for what is shown of
    it.
    """

    metric: Metric
    stat: str = PLAIN  # PLAIN, "p99", "p99.9", "mean" or "n"
    # of the value under this name: the unit it was spelled with, else the metric's ("samples" for
    # _n)
    unit: str = ""
    spelling: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        """The suite's own spelling of this figure (in the metric's unit)."""
        return self.metric.figure(self.stat)

    def __str__(self) -> str:
        return self.spelling or self.name

    @property
    def known(self) -> bool:
        """A figure of a catalogued metric (results may hold figures the catalogue does not
        know).
        """
        return _BY_NAME.get(self.metric.name) is self.metric

    @property
    def better(self) -> str | None:
        return None if self.stat == "n" else self.metric.better

    @property
    def higher_is_better(self) -> bool:
        """A fall is the bad direction (throughput, goodput); for everything else, unknown figures
        included, a rise is."""
        return self.better == HIGHER

    @property
    def percentile(self) -> float | None:
        return float(self.stat[1:]) if self.stat.startswith("p") else None

    def same(self, other: Figure) -> bool:
        """The same metric and statistic, whatever the spelling or unit."""
        return self.metric is other.metric and self.stat == other.stat

    def seconds(self, value: float) -> float | None:
        """A time figure in seconds (``ttft_p99_ms``: value / 1000); None for a figure that is not a
        time.
        """
        factor = SECONDS.get(self.unit)
        return None if factor is None else value * factor

    def names(self) -> set[str]:
        """The names a pattern rule may match it by: as spelled and as the suite names it, each with
        and without its unit."""
        return {name for text in (str(self), self.name) for name in (text, split_unit(text)[0])}


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


def _ok(r: RequestMetrics, value: float | None) -> list[float]:
    """A successful request's one sample (a failed request's partial timings are no sample of the
    server).
    """
    return [value] if r.ok and value is not None else []


def _per_s(count: float, s: Point) -> float:
    return count / s.window_s if s.window_s > 0 else 0.0


def _share(count: float, s: Point, empty: float) -> float:
    return count / s.requests if s.requests else empty


def _prompt_tokens_mean(s: Point) -> float | None:
    prompts = [
        t.usage_prompt_tokens
        for m in s.measured
        if (t := m.trace) and t.usage_prompt_tokens is not None
    ]
    return sum(prompts) / len(prompts) if prompts else None


def _per_request(
    name: str,
    description: str,
    per_request: Callable[[RequestMetrics], Iterable[float]],
    *,
    samples: str = "request",
    headline: tuple[str, ...] = (),
    goodput: bool = False,
    client: bool = False,
    confidence: tuple[str, ...] = (),
    listed: tuple[str, ...] = (),
    reported: tuple[str, ...] = (),
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
        per_request=per_request,
        digits=3,
        confidence=confidence,
        listed=listed,
        reported=reported,
    )


# Order matters: it is the order of a summary's headline figures and of the threshold keys an error
# lists, and, the load point's figures before the distributions, of the figures a summary stores and
# a load point's table lists.
CATALOGUE: list[Metric] = [
    _per_request(
        "ttft",
        "time to first token: send to the first event carrying output",
        lambda r: _ok(r, r.ttft_ms),
        headline=("p50", "p99"),
        goodput=True,
        confidence=("p50",),
        listed=("p50", "p99"),
    ),
    _per_request(
        "ttfb",
        "time to first byte: send to the first byte of the body (a role-only chunk counts)",
        lambda r: _ok(r, r.ttfb_ms),
        listed=("p50",),
    ),
    _per_request(
        "tpot",
        "time per output token after the first: (E2E - TTFT) / (output tokens - 1)",
        lambda r: _ok(r, r.tpot_ms),
        headline=("p99",),
        goodput=True,
        confidence=("p50",),
        listed=("p99",),
        reported=PER_TOKEN_REPORTED,
    ),
    _per_request(
        "itl",
        "inter-token latency: the gap between successive output events",
        lambda r: r.itl_event_ms if r.ok else [],
        samples="event",
        headline=("p99",),
        listed=("p99",),
        reported=PER_TOKEN_REPORTED,
    ),
    _per_request(
        "itl_token",
        "inter-token latency per token: an event of k tokens gives k gaps of gap/k",
        lambda r: r.itl_token_ms if r.ok else [],
        samples="event",
        reported=PER_TOKEN_REPORTED,
    ),
    _per_request(
        "e2e",
        "end to end: send to [DONE] (or the end of the body)",
        lambda r: _ok(r, r.e2e_ms),
        headline=("p99",),
        goodput=True,
        confidence=("p50",),
        listed=("p99",),
    ),
    _per_request(
        "schedule_lag",
        "the client's actual send time minus the one its arrival schedule intended",
        # a failed request was late too
        lambda r: [] if r.schedule_lag_ms is None else [r.schedule_lag_ms],
        client=True,
    ),
    Metric(
        "loop_lag",
        "ms",
        LOWER,
        "how late the client's event loop ran a periodic tick",
        samples="tick",
        client=True,
    ),  # the load run's ticks, not the requests': its figures are the client's (profiles.evaluate)
    Metric(
        "requests",
        "requests",
        None,
        "measured requests (warm-up and cool-down excluded)",
        per_point=lambda s: s.requests,
        listed=(PLAIN,),
    ),
    Metric("ok", "requests", HIGHER, "measured requests that succeeded", per_point=lambda s: s.ok),
    Metric(
        "failed",
        "requests",
        LOWER,
        "measured requests that failed",
        per_point=lambda s: s.failed,
        listed=(PLAIN,),
    ),
    Metric(
        "window",
        "s",
        None,
        "the measurement window: first measured send to last measured end",
        per_point=lambda s: s.window_s,
        digits=3,
        listed=(PLAIN,),
    ),
    Metric(
        "output_tokens",
        "tokens",
        None,
        "output tokens of the successful measured requests",
        per_point=lambda s: s.output_tokens,
    ),
    Metric(
        "output_tokens_per_s",
        "tokens/s",
        HIGHER,
        "output tokens of the successful measured requests per second of the window",
        aliases=("output_tps", "tps", "throughput", "output_throughput"),
        headline=(PLAIN,),
        threshold="min_output_tokens_per_s",
        per_point=lambda s: _per_s(s.output_tokens, s),
        digits=2,
        confidence=(PLAIN,),
        listed=(PLAIN,),
    ),
    Metric(
        "requests_per_s",
        "requests/s",
        HIGHER,
        "successful measured requests per second of the window",
        aliases=("rps", "qps", "request_throughput"),
        threshold="min_requests_per_s",
        per_point=lambda s: _per_s(s.ok, s),
        digits=3,
        listed=(PLAIN,),
    ),
    Metric(
        "goodput_rps",
        "requests/s",
        HIGHER,
        "measured requests that met every per-request limit, per second of the window",
        aliases=("goodput",),
        headline=(PLAIN,),
        per_point=lambda s: _per_s(s.met, s),
        digits=3,
        listed=(PLAIN,),
    ),
    Metric(
        "attainment",
        "share",
        HIGHER,
        "share of the measured requests that met every per-request limit",
        aliases=("goodput_share",),
        threshold="min_goodput_share",
        per_point=lambda s: _share(s.met, s, 0.0),
        digits=4,
        listed=(PLAIN,),
    ),
    Metric(
        "error_share",
        "share",
        LOWER,
        "share of the measured requests that failed",
        threshold="max_error_share",
        per_point=lambda s: _share(s.failed, s, 1.0),
        digits=4,
    ),
    Metric(
        "one_token_outputs",
        "requests",
        None,
        "successful requests with one output token (they have no TPOT)",
        per_point=lambda s: sum(m.ok and m.tpot_ms is None for m in s.measured),
    ),
    Metric(
        "token_mismatches",
        "requests",
        LOWER,
        "requests whose usage count differs from the client's count by more than 2%",
        per_point=lambda s: sum(m.ok and m.token_mismatch for m in s.measured),
    ),
    Metric(
        "streams_without_done",
        "requests",
        LOWER,
        "streams that ended without [DONE]",
        per_point=lambda s: sum(m.ok and not m.done for m in s.measured),
    ),
    Metric(
        "prompt_tokens_mean",
        "tokens",
        None,
        "mean prompt length the server reported",
        per_point=_prompt_tokens_mean,
        digits=1,
        listed=(PLAIN,),
    ),
    Metric(
        "output_tokens_mean",
        "tokens",
        None,
        "mean output length of the successful requests",
        per_point=lambda s: s.output_tokens / s.ok if s.ok else None,
        digits=1,
        listed=(PLAIN,),
    ),
    Metric(
        "peak_rss",
        "gb",
        LOWER,
        "peak resident memory of the server's process tree (GiB)",
        aliases=("rss",),
        threshold="max_rss_gb",
        needs=(
            "the server's process on this machine to watch (one the plugin launched, or one "
            "listening on the endpoint's"
            " port here)"
        ),
        listed=(PLAIN,),
    ),
    Metric(
        "peak_gpu_memory",
        "gb",
        LOWER,
        "peak memory used per GPU (GiB, NVML); a threshold judges the fullest GPU",
        aliases=("gpu_memory",),
        threshold="max_gpu_memory_gb",
        needs="NVML (pip install 'pytest-infer[gpu]') and a GPU on this machine",
        listed=(PLAIN,),
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
        listed=(PLAIN,),
    ),
    Metric(
        "energy_per_request",
        "j",
        LOWER,
        "GPU energy over the measured window per successful measured request (joules)",
        aliases=("joules_per_request",),
        threshold="max_energy_per_request_j",
        needs=ENERGY_NEEDS,
        listed=(PLAIN,),
    ),
    Metric(
        "capacity_rps",
        "requests/s",
        HIGHER,
        "capacity search: the highest offered request rate at which every threshold of the point "
        "held",
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
    Metric("server_pid", "pid", None, "process id of the server whose memory was sampled"),
]


def _index(catalogue: Iterable[Metric]) -> dict[str, Metric]:
    """Every name and alias -> its metric; refuses a name given twice, a bound on the wrong side and
    a computation that does not fit the metric."""
    index: dict[str, Metric] = {}
    for m in catalogue:
        for name in (m.name, *m.aliases):
            if name in index:
                raise ValueError(f"metric name {name!r} is given twice")
            index[name] = m
        if (
            m.threshold
            and not m.samples
            and not m.threshold.startswith("min_" if m.better == HIGHER else "max_")
        ):
            raise ValueError(
                f"{m.name}: a {m.better}-is-better metric's threshold cannot be {m.threshold!r}"
            )
        if (m.per_request and not m.samples) or (m.per_point and m.samples):
            raise ValueError(
                f"{m.name}: per_request computes a per-request metric, per_point a load point's"
            )
    return index


_BY_NAME = _index(CATALOGUE)
_BY_THRESHOLD = {m.threshold: m for m in CATALOGUE if m.threshold and not m.samples}


def register(metric: Metric) -> Metric:
    """Add a metric to the catalogue (after the built-in ones): from then on the summary computes
    it, thresholds, rules and reports name it. Raises ValueError where it clashes with a metric
    already there."""
    global _BY_NAME, _BY_THRESHOLD
    _BY_NAME = _index([*CATALOGUE, metric])
    CATALOGUE.append(metric)
    _BY_THRESHOLD = {m.threshold: m for m in CATALOGUE if m.threshold and not m.samples}
    _parse.cache_clear()
    return metric


def unregister(metric: Metric) -> None:
    """Take a registered metric out again (a test's, at its end)."""
    global _BY_NAME, _BY_THRESHOLD
    CATALOGUE.remove(metric)
    _BY_NAME = _index(CATALOGUE)
    _BY_THRESHOLD = {m.threshold: m for m in CATALOGUE if m.threshold and not m.samples}
    _parse.cache_clear()


def in_figure_order() -> list[Metric]:
    """The catalogue with the load point's metrics before the per-request ones: the order a summary
    stores them in.
    """
    return sorted(CATALOGUE, key=lambda m: m.samples is not None)


def headline_figures() -> list[Figure]:
    return [m.at(stat) for m in CATALOGUE for stat in m.headline]


def confidence_figures() -> list[Figure]:
    """The figures given a confidence interval over a load point's repeated runs."""
    return [m.at(stat) for m in in_figure_order() for stat in m.confidence]


def listed_figures() -> list[Figure]:
    """The figures a load point's text table lists."""
    return [m.at(stat) for m in in_figure_order() for stat in m.listed]


def split_unit(name: str) -> tuple[str, str]:
    """``ttft_p99_ms`` -> (``ttft_p99``, ``ms``); a name without a known unit suffix -> (name,
    "").
    """
    stem, _, suffix = name.lower().rpartition("_")
    return (stem, suffix) if stem and suffix in SUFFIX_UNITS else (name.lower(), "")


def metric(name: str) -> Metric:
    """A metric by its name or an alias (no statistic, no unit); raises UnknownMetric."""
    try:
        return _BY_NAME[name.lower()]
    except KeyError:
        raise UnknownMetric(
            f"unknown metric {name!r}; known: {', '.join(m.name for m in CATALOGUE)}"
        ) from None


@lru_cache(maxsize=1024)
def _uncatalogued(stem: str) -> Metric:
    """The stand-in metric of a name the catalogue does not know: one per name, so its spellings are
    one figure.
    """
    return Metric(stem, "", None, "not in the catalogue")


@lru_cache(maxsize=4096)
def _parse(name: str) -> tuple[Figure, str] | None:
    """The figure a name means, with the metric name as spelled; None when it is not a known
    metric's.
    """
    text = name.lower()
    if text in _BY_NAME:
        return Figure(_BY_NAME[text], PLAIN, _BY_NAME[text].unit, name), text
    stem, unit = split_unit(text)
    stat = PLAIN
    if stem not in _BY_NAME and (match := _STAT.search(stem)):
        stem = stem[: match.start()]
        stat = match["word"] or f"p{float(match['q'].replace('_', '.')):g}"
    found = _BY_NAME.get(stem)
    if (
        found is None
        or (stat and not found.samples)
        or (unit and SUFFIX_UNITS[unit] != SUFFIX_UNITS.get(found.unit))
    ):
        return None
    if stat == "n":
        return None if unit else (Figure(found, stat, "samples", name), stem)
    return Figure(found, stat, unit or found.unit, name), stem


def resolve(name: str) -> Figure | None:
    """The figure a name means (``output_tps`` and ``output_tokens_per_s`` are one), or None when it
    is not a known metric's."""
    parsed = _parse(name)
    return parsed[0] if parsed else None


def parse(name: str) -> Figure:
    """The figure a stored name means; a name the catalogue does not know is a figure of its own (no
    direction), whose unit is the one its name ends in."""
    if (known := resolve(name)) is not None:
        return known
    stem, unit = split_unit(name)
    return Figure(_uncatalogued(stem), PLAIN, unit, name)


def direction(name: str) -> str | None:
    """HIGHER or LOWER when a change of this figure is good or bad; None for a count of the load, a
    sample count, or an unknown name."""
    figure = resolve(name)
    return figure.better if figure else None


def higher_is_better(name: str) -> bool:
    """A fall is the bad direction (throughput, goodput); for everything else, unknown names
    included, a rise is.
    """
    return parse(name).higher_is_better


def unit(name: str) -> str | None:
    """The unit of the value under this name: the known metric's, else a unit suffix the name ends
    in, else None.
    """
    return parse(name).unit or None


def to_seconds(name: str, value: float) -> float | None:
    """A time figure in seconds (``ttft_p99_ms``: value / 1000); None for a figure that is not a
    time.
    """
    return parse(name).seconds(value)


def find(figures: Mapping[Figure, V], *wanted: Figure) -> tuple[Figure, V] | None:
    """The first of ``wanted`` that ``figures`` holds in any unit, as (the figure as it holds it,
    its value).
    """
    for want in wanted:
        for figure, value in figures.items():
            if figure.same(want):
                return figure, value
    return None


def headline(figures: Mapping[Figure, V]) -> dict[Figure, V]:
    """The figures a summary shows, in the catalogue's order, each as ``figures`` holds it."""
    shown: dict[Figure, V] = {}
    for want in headline_figures():
        if found := find(figures, want):
            shown[found[0]] = found[1]
    return shown


def stored(figures: Mapping[str, Any]) -> dict[Figure, Any]:
    """Figures read from where they are stored by name (a results entry, a summary's
    ``figures()``).
    """
    return {parse(name): value for name, value in figures.items()}


def samples_of(figure: Figure) -> list[Figure]:
    """The per-request samples a statistic is of: ``ttft_p99_ms`` -> ``ttft_ms``; none for a sample
    count.
    """
    if not figure.known or not figure.stat or figure.better is None:  # a sample count is not tested
        return []
    return [figure.metric.at()]


def threshold_keys() -> list[str]:
    """Every key a profile's ``thresholds`` may use (for error messages)."""
    return [m.threshold for m in CATALOGUE if m.threshold]


def threshold(key: str) -> Bound:
    """What a profile threshold key bounds: ``ttft_p99_ms`` -> max of TTFT's p99,
    ``min_goodput_share`` -> min of attainment.

    Keys are spelled exactly as ``threshold_keys`` lists them; raises UnknownMetric, saying why,
    otherwise.
    """
    if key in _BY_THRESHOLD:
        found = _BY_THRESHOLD[key]
        return Bound(key, found.at(), "max" if found.better == LOWER else "min")
    parsed = _parse(key)
    if parsed is None:
        raise UnknownMetric(f"unknown threshold {key!r}; valid: {', '.join(threshold_keys())}")
    figure, spelled = parsed
    m = figure.metric
    if (
        figure.percentile is not None
        and not 0 < figure.percentile < 100
        and m.threshold
        and spelled == m.name
    ):
        raise UnknownMetric(f"threshold {key!r}: the percentile must be between 0 and 100")
    if figure.percentile is None or m.threshold is None or spelled != m.name or figure.name != key:
        raise UnknownMetric(f"unknown threshold {key!r}; valid: {', '.join(threshold_keys())}")
    return Bound(key, figure, "max")


def check_threshold_key(key: str) -> str | None:
    """None if ``key`` is a valid threshold key, else why not."""
    try:
        threshold(key)
    except UnknownMetric as exc:
        return str(exc)
    return None
