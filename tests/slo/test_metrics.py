"""Metric definitions on synthetic traces whose answers are worked out by hand."""

from __future__ import annotations

import math

import pytest

from pytest_infer.load.trace import RequestTrace
from pytest_infer.slo.metrics import (
    InsufficientSamples,
    ValidityRules,
    confidence_interval,
    median_interval,
    min_samples,
    percentile,
    request_limits,
    request_metrics,
    summarize,
    validity,
)
from pytest_infer.slo.metrics.catalogue import metric, resolve
from pytest_infer.slo.metrics.judge import judge

MS = 1_000_000


def trace(
    index=0,
    *,
    sent=0,
    first_byte=None,
    events=(),
    end=None,
    usage=None,
    phase="measured",
    status=200,
    error=None,
    done=True,
    intended=None,
):
    """Times in ms from the (arbitrary) clock origin; events are (time_ms, tokens)."""
    return RequestTrace(
        index=index,
        phase=phase,
        intended_ns=None if intended is None else intended * MS,
        sent_ns=sent * MS,
        first_byte_ns=None if first_byte is None else first_byte * MS,
        event_ns=[t * MS for t, _ in events],
        event_tokens=[k for _, k in events],
        end_ns=None if end is None else end * MS,
        done=done,
        status=status,
        error=error,
        usage_completion_tokens=usage,
    )


# sent at 1000 ms; role-only chunk at 1010 (first byte); output events at 1050 (1 token),
# 1070 (1 token), 1100 (2 tokens, e.g. speculative decoding); [DONE] at 1110; usage says 4.
BASIC = dict(
    sent=1000, first_byte=1010, events=[(1050, 1), (1070, 1), (1100, 2)], end=1110, usage=4
)


def test_request_metrics_by_hand():
    m = request_metrics(trace(**BASIC))
    assert m.ok
    assert m.ttfb_ms == pytest.approx(10)  # the role-only chunk is a byte, not a token
    assert m.ttft_ms == pytest.approx(50)
    assert m.e2e_ms == pytest.approx(110)
    assert m.itl_event_ms == pytest.approx([20, 30])  # one gap per event
    assert m.itl_token_ms == pytest.approx([20, 15, 15])  # the 30 ms gap belongs to 2 tokens
    assert m.tpot_ms == pytest.approx((110 - 50) / (4 - 1))  # 20 ms
    assert m.output_tokens == 4 and m.client_tokens == 4 and not m.token_mismatch


def test_one_token_output_has_no_tpot():
    m = request_metrics(trace(sent=0, events=[(40, 1)], end=45, usage=1))
    assert m.ttft_ms == pytest.approx(40) and m.tpot_ms is None and m.itl_event_ms == []


def test_token_count_disagreement_over_two_percent():
    assert request_metrics(
        trace(sent=0, events=[(1, 1)] * 8, end=9, usage=10)
    ).token_mismatch  # 8 v 10: 20%
    assert not request_metrics(
        trace(sent=0, events=[(1, 1)] * 99, end=9, usage=100)
    ).token_mismatch  # 1%
    # without usage the client's own count is used and nothing can disagree
    m = request_metrics(trace(sent=0, events=[(1, 1)] * 5, end=9, usage=None))
    assert m.output_tokens == 5 and not m.token_mismatch


def test_failed_and_outputless_requests_are_not_ok():
    assert not request_metrics(trace(sent=0, end=5, status=500, error="HTTP 500: boom")).ok
    m = request_metrics(trace(sent=0, first_byte=3, events=[], end=5, usage=0))
    assert not m.ok and m.error == "no output"


def test_schedule_lag_is_actual_minus_intended_send():
    assert request_metrics(
        trace(intended=100, sent=103, events=[(150, 1)], end=160)
    ).schedule_lag_ms == pytest.approx(3)


def test_summary_by_hand():
    traces = [
        trace(0, phase="warmup", sent=0, events=[(5, 1)], end=6, usage=1),  # excluded
        trace(1, **BASIC),  # ttft 50, e2e 110, tpot 20, 4 tokens
        trace(
            2, sent=1200, first_byte=1300, events=[(1300, 1), (1400, 1)], end=1400, usage=2
        ),  # ttft 100, e2e 200, tpot 100
        trace(3, sent=1500, end=1510, status=503, error="HTTP 503: overloaded"),  # failed
        trace(4, phase="cooldown", sent=1900, events=[(1950, 1)], end=1999, usage=1),  # excluded
    ]
    # window: first measured send (1000) to last measured end (1510): 0.51 s
    s = summarize(
        traces, 1000 * MS, 1510 * MS, request_limits({"ttft_p99_ms": 60, "e2e_p99_ms": 500})
    )
    assert (s.requests, s.ok, s.failed) == (3, 2, 1)
    assert s.window_s == pytest.approx(0.51)
    assert s.output_tokens == 6
    assert s.value(resolve("output_tokens_per_s")) == pytest.approx(6 / 0.51)
    assert s.value(resolve("requests_per_s")) == pytest.approx(2 / 0.51)
    # only request 1 meets ttft <= 60 and e2e <= 500; the failed one never meets anything
    assert s.met == 1 and s.value(resolve("attainment")) == pytest.approx(1 / 3)
    assert s.value(resolve("goodput_rps")) == pytest.approx(1 / 0.51)
    assert s.samples[metric("ttft")] == pytest.approx([50, 100])
    assert s.samples[metric("itl")] == pytest.approx([20, 30, 100])
    assert s.samples[metric("tpot")] == pytest.approx([20, 100])
    assert s.value(resolve("ttft_p50")) == pytest.approx(
        75
    )  # linear interpolation between 50 and 100
    assert s.errors == ["HTTP 503: overloaded"]
    figures = s.figures()
    assert figures["ttft_p99_ms"] == "insufficient samples" and figures[
        "ttft_p50_ms"
    ] == pytest.approx(75)


def test_percentile_method_and_refusal():
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    values = list(range(1, 101))
    assert percentile(values, 99) == pytest.approx(99.01)  # rank 0.99 * 99 = 98.01 -> 99 + 0.01
    with pytest.raises(InsufficientSamples, match="p99 needs at least 100 samples, got 99"):
        percentile(values[:99], 99)
    assert [min_samples(q) for q in (50, 90, 95, 99, 99.9)] == [2, 10, 20, 100, 1000]
    assert [min_samples(q) for q in (0, 5, 10, 25)] == [1, 20, 10, 4]


def test_the_median_of_repeated_runs_gets_an_interval_from_the_runs_themselves():
    """A p99 with one slow run: the mean's t-interval goes below zero, the median's stays among the runs."""
    runs = [14.0, 12.0, 13.0, 15.0, 900.0, 16.0, 13.0, 14.0]
    assert confidence_interval(runs).low < 0
    assert median_interval(runs) == (
        12.0,
        900.0,
    )  # 8 runs: only the extremes bound the median at 95%
    assert median_interval([float(v) for v in range(1, 17)]) == (4.0, 13.0)
    assert (
        median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    )  # too few runs for any two to bound it at 95%


def test_confidence_interval_student_t():
    est = confidence_interval([10.0, 12.0, 14.0])
    half = 4.302652729911275 * 2.0 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n)
    assert (
        est.mean == pytest.approx(12)
        and est.low == pytest.approx(12 - half)
        and est.high == pytest.approx(12 + half)
    )
    with pytest.raises(InsufficientSamples):
        confidence_interval([1.0])


def _summary(n: int, ttft: float = 50.0, failed: int = 0):
    traces = [
        trace(
            i,
            sent=i * 1000,
            events=[(i * 1000 + ttft, 1), (i * 1000 + ttft + 10, 1)],
            end=i * 1000 + ttft + 10,
            usage=2,
        )
        for i in range(n)
    ]
    traces += [
        trace(n + j, sent=(n + j) * 1000, end=(n + j) * 1000 + 1, status=500, error="HTTP 500")
        for j in range(failed)
    ]
    return summarize(traces, 0, (n + failed) * 1000 * MS, request_limits({"ttft_p99_ms": 60}))


def test_judge_pass_and_fail():
    s = _summary(100)
    passed = judge(s, {"ttft_p99_ms": 60, "min_goodput_share": 0.99, "max_error_share": 0})
    assert passed.status == "pass" and not passed.failures
    failed = judge(s, {"ttft_p50_ms": 40, "min_output_tokens_per_s": 10})
    assert failed.status == "fail"
    assert [c.name for c in failed.failures] == [
        "ttft_p50_ms",
        "min_output_tokens_per_s",
    ]  # 50 > 40; 2 tok/s < 10


def test_memory_thresholds_use_the_sampled_peaks():
    s = _summary(10)
    assert judge(s, {"max_rss_gb": 1}, {"peak_rss_gb": 2.5}).status == "fail"
    assert (
        judge(s, {"max_gpu_memory_gb": 70}, {"peak_gpu_memory_gb": [60.0, 71.0]}).status == "fail"
    )  # the fullest GPU


def test_a_threshold_whose_figure_was_not_measured_is_never_a_pass_and_names_what_was_missing():
    s = _summary(10)
    no_gpu = judge(s, {"ttft_p50_ms": 1000, "max_gpu_memory_gb": 70}, {"peak_gpu_memory_gb": None})
    assert no_gpu.status == "invalid" and not no_gpu.checks[1].ok
    assert no_gpu.invalid == [
        "max_gpu_memory_gb not measured: needs NVML (pip install 'pytest-infer[gpu]') and a GPU on this machine"
    ]
    assert str(no_gpu.checks[1]).startswith(
        "NOT MEASURED max_gpu_memory_gb: n/a <= 70 (not measured: needs NVML"
    )
    no_process = judge(s, {"max_rss_gb": 16}, {"peak_rss_gb": None})
    assert (
        no_process.status == "invalid"
        and "max_rss_gb not measured: needs the server's process on this machine"
        in no_process.invalid[0]
    )


def test_failed_requests_fail_a_percentile_instead_of_invalidating_it():
    s = _summary(60, failed=40)  # 100 planned requests: enough for p99, but 40 failed
    assert validity(s, {"ttft_p99_ms": 60}, client_busy=0.1) == []
    verdict = judge(s, {"ttft_p99_ms": 60})
    assert verdict.status == "fail" and "40 of 100 requests failed" in verdict.checks[0].note


def test_too_small_a_plan_is_invalid_not_a_verdict():
    s = _summary(40)
    reasons = validity(s, {"ttft_p99_ms": 60, "ttft_p50_ms": 60}, client_busy=0.1)
    assert reasons == [
        "insufficient samples: ttft_p99_ms needs at least 100, the load point measured 40"
    ]
    verdict = judge(s, {"ttft_p99_ms": 60}, invalid=reasons)
    assert verdict.status == "invalid" and verdict.checks == []


def test_client_bottleneck_rules():
    s = _summary(100)
    rules = ValidityRules(max_client_busy=0.8, max_loop_lag_p99_ms=20)
    assert validity(s, {}, client_busy=0.5, loop_lag_ms=[1.0] * 200, rules=rules) == []
    saturated = validity(s, {}, client_busy=0.95, client_cpu=0.2, client_wait=0.75, rules=rules)
    assert saturated == [
        "client saturated: its event-loop thread was busy 95% of the window (cpu 20%, waiting for a CPU 75%), over the"
        " 80% limit"
    ]
    lagging = validity(s, {}, client_busy=0.1, loop_lag_ms=[1.0] * 150 + [50.0] * 50, rules=rules)
    assert lagging == ["client event loop lagged: p99 50.0 ms > 20 ms"]
    late = _summary(0)
    late.samples[metric("schedule_lag")] = [30.0] * 100
    assert validity(late, {}, client_busy=0.1, rules=ValidityRules(max_schedule_lag_p99_ms=20)) == [
        "client fell behind its arrival schedule: p99 lag 30.0 ms > 20 ms"
    ]


def test_only_goodput_p99_thresholds_become_per_request_limits():
    thresholds = {
        "ttft_p99_ms": 60,
        "ttft_p50_ms": 40,
        "tpot_p99_ms": 20,
        "itl_p99_ms": 30,
        "e2e_p99_ms": 9,
        "min_output_tokens_per_s": 5,
    }
    assert request_limits(thresholds) == {
        metric("ttft"): 60.0,
        metric("tpot"): 20.0,
        metric("e2e"): 9.0,
    }  # itl is not a goodput metric
    assert request_limits({"ttft_p50_ms": 40}) == {} and request_limits({}) == {}


def test_a_check_line_says_its_state_figure_limit_and_note():
    from pytest_infer.slo.metrics.judge import ThresholdCheck

    assert (
        str(ThresholdCheck("ttft_p99_ms", 12.345678, 60, "<=", True))
        == "ok   ttft_p99_ms: 12.35 <= 60"
    )
    assert (
        str(ThresholdCheck("min_output_tokens_per_s", 2, 10, ">=", False))
        == "FAIL min_output_tokens_per_s: 2 >= 10"
    )
    assert (
        str(ThresholdCheck("ttft_p99_ms", None, 60, "<=", False, "3 of 9 requests failed"))
        == "FAIL ttft_p99_ms: n/a <= 60 (3 of 9 requests failed)"
    )


def test_validity_limits_are_exclusive_and_a_missing_cpu_share_is_left_out():
    s = _summary(100)
    rules = ValidityRules(max_client_busy=0.8, max_loop_lag_p99_ms=20, max_schedule_lag_p99_ms=20)
    assert (
        validity(s, {}, client_busy=0.8, loop_lag_ms=[20.0] * 100, rules=rules) == []
    )  # at the limit is within it
    assert validity(s, {}, client_busy=0.9, rules=rules) == [
        "client saturated: its event-loop thread was busy 90% of the window (), over the 80% limit"
    ]
    assert validity(s, {}, client_busy=None, loop_lag_ms=[20.0] * 99, rules=rules) == []
    assert validity(s, {}, client_busy=0.1, loop_lag_ms=[50.0] * 100, rules=rules) == [
        "client event loop lagged: p99 50.0 ms > 20 ms"
    ]
    late = _summary(0)
    late.samples[metric("schedule_lag")] = [20.0] * 100
    assert validity(late, {}, client_busy=0.1, rules=rules) == []
    late.samples[metric("schedule_lag")] = [20.0] * 99
    assert validity(late, {}, client_busy=0.1, rules=rules) == []


def test_too_few_lag_samples_still_bound_the_p99_from_below():
    """A loop stalled for most of the window ticks a few times; the highest percentile those ticks resolve
    is a floor under the p99, so a floor over the limit is a lag, and a floor under it proves nothing."""
    s = _summary(100)
    rules = ValidityRules(max_loop_lag_p99_ms=20, max_schedule_lag_p99_ms=20)
    assert validity(
        s, {}, client_busy=0.3, loop_lag_ms=[292.0, 300.0, 310.0, 5.0], rules=rules
    ) == ["client event loop lagged: p99 at least 302.5 ms (p75 of only 4 ticks) > 20 ms"]
    assert validity(s, {}, client_busy=None, loop_lag_ms=[50.0] * 99, rules=rules) == [
        "client event loop lagged: p99 at least 50.0 ms (p99 of only 99 ticks) > 20 ms"
    ]
    assert validity(s, {}, client_busy=None, loop_lag_ms=[400.0], rules=rules) == [
        "client event loop lagged: p99 at least 400.0 ms (p0 of only 1 tick) > 20 ms"
    ]
    assert (
        validity(s, {}, client_busy=0.3, loop_lag_ms=[1.0, 1.0, 1.0, 10.0], rules=rules) == []
    )  # the floor (p75) is 3.25 ms
    late = _summary(0)
    late.samples[metric("schedule_lag")] = [30.0, 40.0]
    assert validity(late, {}, client_busy=0.1, rules=rules) == [
        "client fell behind its arrival schedule: p99 lag at least 35.0 ms (p50 of only 2 requests) > 20 ms"
    ]


def test_every_judgement_path_records_its_figure_limit_operator_and_reason():
    s = _summary(10, failed=2)
    verdict = judge(s, {"ttft_p50_ms": 40, "ttft_p99_ms": 60, "max_error_share": 0.5, "max_rss_gb": 16,
                        "max_gpu_memory_gb": 70}, {"peak_rss_gb": 2.5, "peak_gpu_memory_gb": [60.0, 71.0]})  # fmt: skip
    assert verdict.to_dict() == {
        "status": "fail",
        "checks": [
            {"name": "ttft_p50_ms", "measured": 50.0, "limit": 40.0, "op": "<=", "ok": False, "note": "",
             "unmeasured": False},
            {"name": "ttft_p99_ms", "measured": None, "limit": 60.0, "op": "<=", "ok": False,
             "note": "2 of 12 requests failed: p99 needs at least 100 samples, got 10", "unmeasured": False},
            {"name": "max_error_share", "measured": pytest.approx(2 / 12), "limit": 0.5, "op": "<=", "ok": True,
             "note": "", "unmeasured": False},
            {"name": "max_rss_gb", "measured": 2.5, "limit": 16.0, "op": "<=", "ok": True, "note": "",
             "unmeasured": False},
            {"name": "max_gpu_memory_gb", "measured": 71.0, "limit": 70.0, "op": "<=", "ok": False, "note": "",
             "unmeasured": False},
        ],
        "invalid": [],
    }  # fmt: skip
    unmeasured = judge(
        s, {"max_gpu_memory_gb": 70, "max_error_share": 0.5}, {"peak_gpu_memory_gb": []}
    )
    assert [c["ok"] for c in unmeasured.to_dict()["checks"]] == [
        False,
        True,
    ]  # every threshold judged, the unmeasured one not ok
    assert (
        unmeasured.status == "invalid"
        and unmeasured.checks[0].unmeasured
        and unmeasured.failures == []
    )
    assert judge(s, {"ttft_p50_ms": 40}, invalid=("client saturated",)).to_dict() == {
        "status": "invalid",
        "checks": [],
        "invalid": ["client saturated"],
    }
    assert (
        ValidityRules.from_dict(None) == ValidityRules()
        and ValidityRules.from_dict({"max_client_busy": 0.5}).max_client_busy == 0.5
    )
