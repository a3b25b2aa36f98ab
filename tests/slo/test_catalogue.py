"""The metric catalogue: every spelling of a figure resolves to one metric, with one unit and one direction."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_infer.gating.compare import compare
from pytest_infer.load.trace import RequestTrace
from pytest_infer.reporting.markdown import render_markdown
from pytest_infer.reporting.terminal import render_gate
from pytest_infer.results.model import SessionResults, TargetRecord
from pytest_infer.slo.metrics import summarize, validity
from pytest_infer.slo.metrics.catalogue import (
    CATALOGUE,
    HIGHER,
    LOWER,
    Metric,
    UnknownMetric,
    confidence_figures,
    direction,
    find,
    headline,
    headline_figures,
    higher_is_better,
    listed_figures,
    metric,
    parse,
    register,
    resolve,
    samples_of,
    stored,
    threshold,
    threshold_keys,
    to_seconds,
    unit,
    unregister,
)
from pytest_infer.slo.metrics.judge import judge
from pytest_infer.slo.profiles import available_profiles, load_profile
from pytest_infer.slo.profiles.evaluate import sampled
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings

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
    shown = {f.name: f.better for f in headline_figures()}
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
    assert (
        higher_is_better("output_tps")
        and higher_is_better("attainment")
        and higher_is_better("throughput")
    )
    assert (
        direction("ttft_p99_ms") == LOWER
        and direction("peak_rss_gb") == LOWER
        and direction("error_share") == LOWER
    )
    assert (
        direction("requests") is None
        and direction("server_pid") is None
        and direction("ttft_n") is None
    )
    assert (
        unit("ttft_p99") == "ms"
        and unit("ttft_p99_us") == "us"
        and unit("output_tps") == "tokens/s"
        and unit("foo_ms") == "ms"
    )
    assert to_seconds("ttft_p99_ms", 250) == pytest.approx(0.25) and to_seconds(
        "e2e_p50_us", 5
    ) == pytest.approx(5e-6)
    assert to_seconds("ttft_p99", 250) == pytest.approx(0.25)  # no suffix: the metric's own unit
    assert to_seconds("median_ms", 3) == pytest.approx(0.003)  # an unknown figure by its suffix
    assert (
        to_seconds("output_tps", 100) is None
        and to_seconds("ttft_n", 100) is None
        and to_seconds("peak_rss_gb", 1) is None
    )


def test_headline_keeps_the_stored_names_in_catalogue_order():
    figures = stored(
        {
            "output_tps": 300.0,
            "requests": 100,
            "ttft_p99_ms": 90.0,
            "ttft_p50": 41.0,
            "goodput_rps": 9.5,
            "ttft_p90_ms": 70.0,
        }
    )
    assert [(str(f), v) for f, v in headline(figures).items()] == [
        ("ttft_p50", 41.0),
        ("ttft_p99_ms", 90.0),
        ("output_tps", 300.0),
        ("goodput_rps", 9.5),
    ]
    both = {parse("output_tokens_per_s"): 1.0, parse("peak_gpu_memory_mib"): 2.0}
    assert (
        len(stored({"output_tokens_per_s": 1.0, "output_tps": 2.0})) == 1
    )  # one figure, whatever the spelling
    assert [str(f) for f in both if f in headline(both)] == ["output_tokens_per_s"]
    found = find(stored({"throughput": 5.0, "x": 1.0}), parse("output_tokens_per_s"))
    assert found is not None and (str(found[0]), found[1]) == ("throughput", 5.0)
    found = find(stored({"ttft_mean_ms": 3.0}), parse("ttft_p50"), parse("ttft_mean"))
    assert found is not None and (str(found[0]), found[1]) == ("ttft_mean_ms", 3.0)
    assert find(stored({"x": 1.0}), parse("ttft_p50")) is None


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
        bound.holds(1.0, 1.0)
        and bound.holds(0.5, 1.0) == (kind == "max")
        and bound.holds(2.0, 1.0) == (kind == "min")
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "ttft_p99",
            "unknown threshold 'ttft_p99'",
        ),  # thresholds are spelled exactly, unit included
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
    for name in [*figures, *(f.name for f in [*confidence_figures(), *listed_figures()])]:
        if name == "percentile_method":
            continue
        figure = resolve(name)
        assert figure is not None and figure.name == name, name
    assert [m.figure() for m in sampled()] == ["ttft_ms", "ttfb_ms", "tpot_ms", "e2e_ms"]
    assert [f.name for f in confidence_figures()] == [
        "output_tokens_per_s",
        "ttft_p50_ms",
        "tpot_p50_ms",
        "e2e_p50_ms",
    ]
    assert (
        samples_of(parse("ttft_p99_ms")) == [parse("ttft_ms")] == [parse("ttft")]
        and samples_of(parse("output_tps")) == []
        and samples_of(parse("ttft_n")) == []
        and samples_of(parse("median_p99_ms")) == []
    )


def test_the_catalogue_has_one_owner_per_name():
    names = [n for m in CATALOGUE for n in (m.name, *m.aliases)]
    assert len(names) == len(set(names))
    for m in CATALOGUE:
        assert m.better in (HIGHER, LOWER, None) and m.description
        assert (
            m.client
            or m.threshold is None
            or threshold(m.threshold.replace("<q>", "99")).figure.metric is m
        )


@pytest.fixture
def byte_to_token() -> Iterator[Metric]:
    """A client-side SLO figure added as docs/guide/suites.md says: one catalogue entry, with the function that
    computes it from one request's metrics. Nothing else in the suite names it."""
    entry = register(
        Metric(
            "byte_to_token",
            "ms",
            LOWER,
            "first byte of the body to the first token: how long a role-only chunk ran ahead of the output",
            samples="request",
            headline=("p99",),
            threshold="byte_to_token_p<q>_ms",
            per_request=lambda r: (
                [r.ttft_ms - r.ttfb_ms] if r.ok and None not in (r.ttft_ms, r.ttfb_ms) else []
            ),
            digits=3,
        )
    )
    yield entry
    unregister(entry)


def _requests(gap_ms: int, n: int = 200) -> list[RequestTrace]:
    """``n`` requests whose first token comes ``gap_ms`` (+-20%) after a role-only first byte."""
    rng = random.Random(gap_ms)
    out = []
    for i in range(n):
        sent, token = i * 1000, i * 1000 + 10 + round(gap_ms * rng.uniform(0.8, 1.2))
        out.append(
            trace(
                i,
                sent=sent,
                first_byte=sent + 10,
                events=[(token, 1), (token + 5, 1)],
                end=token + 5,
                usage=2,
            )
        )
    return out


def test_a_new_figure_is_summarized_judged_gated_and_rendered_from_its_catalogue_entry(
    byte_to_token, tmp_path: Path
):
    fast, slow = (
        summarize(_requests(20), 0, 200_000 * MS),
        summarize(_requests(40), 0, 200_000 * MS),
    )
    figures = fast.figures()
    assert figures["byte_to_token_n"] == 200 and 16 <= figures["byte_to_token_p50_ms"] <= 24
    assert list(figures).index("byte_to_token_n") > list(figures).index(
        "e2e_p99_ms"
    )  # after the built-in ones

    profile = tmp_path / "gap.yaml"
    profile.write_text(
        "name: gap\nhardware: {accelerator: cpu}\nmodels:\n  tiny:\n    load_points:\n"
        "      - {id: c1, concurrency: 1, requests: 200, thresholds: {byte_to_token_p99_ms: 30, max_error_share: 0}}\n"
    )
    (point,) = load_profile(profile).load_points("tiny", "vllm")
    assert (
        validity(fast, point.thresholds, client_busy=0.1) == []
        and judge(fast, point.thresholds).status == "pass"
    )
    verdict = judge(slow, point.thresholds)
    assert verdict.status == "fail" and [c.name for c in verdict.failures] == [
        "byte_to_token_p99_ms"
    ]

    results = SessionResults(
        plugin_version="0.1.0", environment={"git": {"commit": "abc123", "dirty": False}}
    )
    for target, summary in (("base", fast), ("cand", slow)):
        results.targets[target] = TargetRecord(
            id=target, framework="vllm", model="tiny", version=target
        )
        results.table("slo").add(
            {
                "target": target,
                "profile": "gap",
                "load_point": "c1",
                "concurrency": 1,
                "verdict": "pass",
                "interleaved": {"id": "turns", "targets": ["base", "cand"]},
                "metrics": {
                    k: v for k, v in summary.figures().items() if isinstance(v, (int, float))
                },
                "samples": {
                    m.figure(): summary.samples[m] for m in sampled()
                },  # its samples are kept for the gate
            }
        )
    gate = compare(
        results,
        results,
        gate_settings(parse_rules("byte_to_token_p99:10%")),
        pairs={"base": "cand"},
    )
    (regression,) = gate.regressions
    assert regression.subject == "gap/c1: byte_to_token_p99_ms"
    assert (
        "limit byte_to_token_p99:10%; samples of byte_to_token_ms (n=200 v 200)"
        in regression.detail
    )
    assert any("byte_to_token_p99_ms" in line for line in render_gate(gate))
    assert "gap/c1 byte_to_token_p99_ms" in render_markdown(
        results
    )  # a headline figure of the load point


def test_a_registered_metric_cannot_take_a_name_already_given_and_leaves_no_trace():
    with pytest.raises(ValueError, match="metric name 'tps' is given twice"):
        register(Metric("tokens_per_s", "tokens/s", HIGHER, "a namesake", aliases=("tps",)))
    with pytest.raises(ValueError, match="per_request computes a per-request metric"):
        register(Metric("lonely", "ms", LOWER, "samples of nothing", per_request=lambda r: []))
    entry = register(
        Metric("queue_depth", "requests", LOWER, "a load point figure", per_point=lambda s: 0)
    )
    assert (
        resolve("queue_depth") == entry.at()
        and summarize([], 0, 10**9).figures()["queue_depth"] == 0
    )
    unregister(entry)
    assert resolve("queue_depth") is None and "queue_depth" not in summarize([], 0, 10**9).figures()
