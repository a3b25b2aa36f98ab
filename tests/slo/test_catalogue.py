"""The metric catalogue: every spelling of a figure resolves to one metric, with one unit and one direction."""

from __future__ import annotations

import pytest

from pytest_infer.slo.metrics import summarize
from pytest_infer.slo.metrics.catalogue import (
    CATALOGUE,
    HEADLINE,
    HIGHER,
    LOWER,
    UnknownMetric,
    direction,
    find,
    headline,
    higher_is_better,
    metric,
    resolve,
    samples_of,
    threshold,
    threshold_keys,
    to_seconds,
    unit,
)
from pytest_infer.slo.profiles import available_profiles, load_profile
from pytest_infer.slo.profiles.evaluate import CI_FIGURES, SAMPLED, TABLE_FIGURES

from .test_metrics import BASIC, MS, trace


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("output_tokens_per_s", "output_tokens_per_s"),
        ("output_tps", "output_tokens_per_s"),  # stored by older results and the gate's examples
        ("tps", "output_tokens_per_s"),
        ("throughput", "output_tokens_per_s"),
        ("output_throughput", "output_tokens_per_s"),  # vLLM's benchmark
        ("rps", "requests_per_s"),
        ("goodput", "goodput_rps"),
        ("goodput_share", "attainment"),
        ("ttft_p99", "ttft_p99_ms"),
        ("ttft_p99_ms", "ttft_p99_ms"),
        ("TTFT_P99_MS", "ttft_p99_ms"),
        ("ttft_p99.9_ms", "ttft_p99.9_ms"),
        ("ttft_p99_9_ms", "ttft_p99.9_ms"),
        ("ttft_mean_ms", "ttft_mean_ms"),
        ("ttft_ms", "ttft_ms"),  # the per-request samples
        ("itl_token_p50_ms", "itl_token_p50_ms"),
        ("ttft_n", "ttft_n"),
        ("rss_gb", "peak_rss_gb"),
        ("peak_gpu_memory_mib", "peak_gpu_memory_gb"),  # the same figure in another unit
        ("window_s", "window_s"),
    ],
)
def test_every_spelling_resolves_to_one_figure(name, canonical):
    figure = resolve(name)
    assert figure is not None and figure.name == canonical
    assert resolve(canonical).same(figure)


@pytest.mark.parametrize(
    "name",
    [
        "latency",
        "lag_p99_ms",
        "median_ms",
        "ttft_gb",
        "output_tps_ms",
        "output_tokens_per_s_p99",
        "ttft_p99_ms_ms",
        "ok_n",
        "",
    ],
)
def test_unknown_names_resolve_to_nothing_and_have_no_direction(name):
    assert resolve(name) is None and direction(name) is None and not higher_is_better(name)
    with pytest.raises(UnknownMetric, match="unknown metric"):
        metric(name)


def test_every_headline_figure_has_a_direction_and_the_expected_one():
    shown = {m.figure(stat): m.better for m, stat in HEADLINE}
    assert shown == {
        "ttft_p50_ms": LOWER,
        "ttft_p99_ms": LOWER,
        "tpot_p99_ms": LOWER,
        "itl_p99_ms": LOWER,
        "e2e_p99_ms": LOWER,
        "output_tokens_per_s": HIGHER,
        "goodput_rps": HIGHER,
    }
    for name in shown:
        assert higher_is_better(name) == (shown[name] == HIGHER)


def test_direction_units_and_seconds():
    assert higher_is_better("output_tps") and higher_is_better("attainment") and higher_is_better("throughput")
    assert direction("ttft_p99_ms") == LOWER and direction("peak_rss_gb") == LOWER and direction("error_share") == LOWER
    assert direction("requests") is None and direction("server_pid") is None and direction("ttft_n") is None
    assert (
        unit("ttft_p99") == "ms"
        and unit("ttft_p99_us") == "us"
        and unit("output_tps") == "tokens/s"
        and unit("foo_ms") == "ms"
    )
    assert to_seconds("ttft_p99_ms", 250) == pytest.approx(0.25) and to_seconds("e2e_p50_us", 5) == pytest.approx(5e-6)
    assert to_seconds("ttft_p99", 250) == pytest.approx(0.25)  # no suffix: the metric's own unit
    assert to_seconds("median_ms", 3) == pytest.approx(0.003)  # an unknown figure by its suffix
    assert (
        to_seconds("output_tps", 100) is None
        and to_seconds("ttft_n", 100) is None
        and to_seconds("peak_rss_gb", 1) is None
    )


def test_headline_keeps_the_stored_names_in_catalogue_order():
    stored = {
        "output_tps": 300.0,
        "requests": 100,
        "ttft_p99_ms": 90.0,
        "ttft_p50": 41.0,
        "goodput_rps": 9.5,
        "ttft_p90_ms": 70.0,
    }
    assert list(headline(stored).items()) == [
        ("ttft_p50", 41.0),
        ("ttft_p99_ms", 90.0),
        ("output_tps", 300.0),
        ("goodput_rps", 9.5),
    ]
    both = {"output_tokens_per_s": 1.0, "output_tps": 2.0}
    assert headline(both) == {"output_tokens_per_s": 1.0}  # one figure, shown once
    assert find({"throughput": 5.0, "x": 1.0}, "output_tokens_per_s") == ("throughput", 5.0)
    assert find({"ttft_mean_ms": 3.0}, "ttft_p50", "ttft_mean") == ("ttft_mean_ms", 3.0)
    assert find({"x": 1.0}, "ttft_p50") is None


@pytest.mark.parametrize(
    ("key", "figure", "kind"),
    [
        ("ttft_p99_ms", "ttft_p99_ms", "max"),
        ("tpot_p90_ms", "tpot_p90_ms", "max"),
        ("itl_token_p99.9_ms", "itl_token_p99.9_ms", "max"),
        ("min_output_tokens_per_s", "output_tokens_per_s", "min"),
        ("min_requests_per_s", "requests_per_s", "min"),
        ("min_goodput_share", "attainment", "min"),
        ("max_error_share", "error_share", "max"),
        ("max_rss_gb", "peak_rss_gb", "max"),
        ("max_gpu_memory_gb", "peak_gpu_memory_gb", "max"),
    ],
)
def test_threshold_keys_map_to_a_figure_and_a_side(key, figure, kind):
    bound = threshold(key)
    assert bound.figure.name == figure and bound.kind == kind
    assert (
        bound.holds(1.0, 1.0) and bound.holds(0.5, 1.0) == (kind == "max") and bound.holds(2.0, 1.0) == (kind == "min")
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("ttft_p99", "unknown threshold 'ttft_p99'"),  # thresholds are spelled exactly, unit included
        ("output_tps", "unknown threshold"),
        ("min_output_tps", "unknown threshold"),  # aliases name figures, not threshold keys
        ("max_output_tokens_per_s", "unknown threshold"),
        ("schedule_lag_p99_ms", "unknown threshold"),  # the client's, judged by validity
        ("ttft_p99_s", "unknown threshold"),
        ("ttft_p100_ms", "the percentile must be between 0 and 100"),
        ("ttft_p0_ms", "the percentile must be between 0 and 100"),
    ],
)
def test_bad_threshold_keys_say_what_is_valid(key, message):
    with pytest.raises(UnknownMetric, match=message):
        threshold(key)


def test_every_threshold_key_and_bundled_profile_key_is_known():
    assert threshold_keys()[0] == "ttft_p<q>_ms" and "min_goodput_share" in threshold_keys()
    for name in available_profiles():
        profile = load_profile(name)
        for model in profile.models:
            for point in profile.load_points(model, "vllm"):
                for key in point.thresholds:
                    assert threshold(key).figure.better is not None, (name, key)


def test_names_the_suite_stores_are_the_catalogues_own():
    traces = [
        trace(
            i,
            sent=i * 1000,
            first_byte=i * 1000 + 5,
            events=[(i * 1000 + 50, 1), (i * 1000 + 60, 1)],
            end=i * 1000 + 60,
            usage=2,
        )
        for i in range(1, 5)
    ]
    traces.append(trace(9, **BASIC))
    figures = summarize(traces, 0, 10_000 * MS).figures()
    for name in [*figures, *CI_FIGURES, *TABLE_FIGURES]:
        if name == "percentile_method":
            continue
        figure = resolve(name)
        assert figure is not None and figure.name == name, name
    assert [m.figure() for m in SAMPLED] == ["ttft_ms", "ttfb_ms", "tpot_ms", "e2e_ms"]
    assert (
        samples_of("ttft_p99_ms") == ["ttft_ms", "ttft"]
        and samples_of("output_tps") == []
        and samples_of("ttft_n") == []
    )


def test_the_catalogue_has_one_owner_per_name():
    names = [n for m in CATALOGUE for n in (m.name, *m.aliases)]
    assert len(names) == len(set(names))
    for m in CATALOGUE:
        assert m.better in (HIGHER, LOWER, None) and m.description
        assert m.client or m.threshold is None or threshold(m.threshold.replace("<q>", "99")).figure.metric is m
