"""What mutation testing left untested in slo/metrics/judge.py: the sample check of each threshold, and figures
that nothing measured."""

from __future__ import annotations

from pytest_infer.load.trace import RequestTrace
from pytest_infer.slo.metrics import Summary, summarize, validity
from pytest_infer.slo.metrics.judge import judge

MS = 1_000_000


def _summary(n: int, events: int = 2) -> Summary:
    """``n`` successful requests 1 s apart, each with ``events`` output events of one token 10 ms apart (TTFT 50 ms)."""
    traces = [
        RequestTrace(index=i, phase="measured", intended_ns=None, sent_ns=i * 1000 * MS, first_byte_ns=None,
                     event_ns=[(i * 1000 + 50 + 10 * k) * MS for k in range(events)], event_tokens=[1] * events,
                     end_ns=(i * 1000 + 50 + 10 * events) * MS, done=True, status=200, error=None,
                     usage_completion_tokens=events)
        for i in range(n)
    ]  # fmt: skip
    return summarize(traces, 0, n * 1000 * MS)


def test_a_per_event_percentile_counts_the_events_not_the_requests():
    one_token_answers = _summary(100, events=1)  # 100 requests, no gap between tokens
    assert validity(one_token_answers, {"itl_p99_ms": 30}, client_busy=0.1) == [
        "insufficient samples: itl_p99_ms needs at least 100, the load point measured 0"
    ]
    assert (
        validity(_summary(40, events=4), {"itl_p99_ms": 30}, client_busy=0.1) == []
    )  # 40 requests, 120 gaps


def test_a_threshold_without_a_percentile_does_not_end_the_sample_check():
    reasons = validity(_summary(40), {"max_error_share": 0.5, "ttft_p99_ms": 60}, client_busy=0.1)
    assert reasons == [
        "insufficient samples: ttft_p99_ms needs at least 100, the load point measured 40"
    ]


def test_a_summary_without_schedule_lag_samples_is_valid():
    """A summary built by hand has no ``schedule_lag`` samples; ``summarize`` always makes them."""
    assert validity(Summary([], window_s=1.0), {}, client_busy=None) == []


def test_a_resource_threshold_judged_without_resources_is_not_measured_and_names_what_it_needs():
    verdict = judge(_summary(10), {"max_rss_gb": 16})
    assert verdict.status == "invalid" and verdict.checks[0].unmeasured
    assert verdict.invalid == [
        "max_rss_gb not measured: needs the server's process on this machine to watch "
        "(one the plugin launched, or one listening on the endpoint's port here)"
    ]


def test_an_unmeasured_figure_that_needs_nothing_in_particular_is_just_not_measured():
    """Capacity is the catalogue's one threshold figure without ``needs``: the capacity search judges it, ``judge``
    never measures it."""
    verdict = judge(_summary(10), {"min_capacity_rps": 5})
    assert verdict.status == "invalid" and verdict.invalid == ["min_capacity_rps not measured"]
    assert str(verdict.checks[0]) == "NOT MEASURED min_capacity_rps: n/a >= 5 (not measured)"


def test_no_thresholds_judge_nothing_and_never_pass():
    """``all([])`` is true: twenty failed requests would pass a point with no limits."""
    verdict = judge(_summary(10), {})
    assert (verdict.status, verdict.checks, verdict.invalid) == (
        "invalid",
        [],
        ["no thresholds: nothing judged the figures"],
    )
