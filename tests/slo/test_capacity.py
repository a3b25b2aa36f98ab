"""Capacity at the SLO: the search's steps on a server whose capacity is known, its early stops, and the suite's
record."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_infer.adapters import registry
from pytest_infer.adapters.external import EndpointAdapter
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.slo.metrics.judge import PointVerdict
from pytest_infer.slo.profiles import LoadPoint, ProfileError, load_profile
from pytest_infer.slo.profiles.capacity import evaluate_capacity, judge_probe, probe_point, search
from pytest_infer.slo.profiles.evaluate import evaluate_point

from .test_suite import copy_suite, run_suite


@dataclass
class Probed:
    """What ``search`` reads of a probe: its verdict and figures (no traces: no saturation to see)."""

    verdict: PointVerdict
    error_share: float = 0.0
    runs: list = field(default_factory=list)
    point: LoadPoint = field(default_factory=lambda: LoadPoint("probe", {}, {"ttft_p90_ms": 100}))

    def figures(self) -> dict[str, Any]:
        return {"error_share": self.error_share}

    def record(self) -> dict[str, Any]:
        return {"workload": {"output_tokens": 8}, "load_point": "not this"}


def holds_up_to(limit: float, over: str):
    seen: list[float] = []

    def measure(point: LoadPoint) -> Probed:
        value = point.settings[over]
        seen.append(value)
        return Probed(PointVerdict("pass" if value <= limit else "fail"))

    return measure, seen


def capacity_point(over: str = "concurrency", **search_settings: Any) -> LoadPoint:
    mode = "closed" if over == "concurrency" else "poisson"
    return LoadPoint(
        "cap",
        {"mode": mode, "requests": 30, "search": {"start": 1, "max": 64, **search_settings}},
        {"ttft_p99_ms": 100},
    )


def test_concurrency_doubles_until_a_failure_then_bisects_to_one_stream():
    measure, seen = holds_up_to(7, "concurrency")
    cap = search(capacity_point(), measure)
    assert seen == [1, 2, 4, 8, 6, 7] and (cap.value, cap.ceiling) == (7, 8)
    assert cap.stopped == "bracketed to one stream" and cap.describe() == "7, below 8"


def test_a_rate_is_bisected_geometrically_until_within_the_resolution():
    measure, seen = holds_up_to(10, "rate")
    cap = search(capacity_point("rate", start=2, resolution=0.25), measure)
    assert seen == [2, 4, 8, 16, 11.314, 9.514]
    assert (
        (cap.value, cap.ceiling) == (9.514, 11.314)
        and cap.ceiling / cap.value <= 1.25
        and cap.stopped == "bracketed within 25%"
    )


def test_a_capacity_below_the_start_is_searched_downwards_and_none_when_nothing_holds():
    measure, seen = holds_up_to(3, "concurrency")
    cap = search(capacity_point(start=16), measure)
    assert seen == [16, 8, 4, 2, 3] and cap.value == 3
    measure, seen = holds_up_to(0, "concurrency")
    cap = search(capacity_point(start=4), measure)
    assert seen == [4, 2, 1] and cap.value is None and "failed down to concurrency 1" in cap.stopped


def test_the_search_stops_at_its_maximum_and_after_max_probes():
    measure, seen = holds_up_to(1000, "concurrency")
    assert search(
        capacity_point(max=8), measure
    ).stopped == "every probe passed up to the search's maximum (8)" and seen == [1, 2, 4, 8]
    measure, seen = holds_up_to(1000, "concurrency")
    assert search(
        capacity_point(max=64, max_probes=3), measure
    ).stopped == "max_probes (3) ran" and seen == [1, 2, 4]


def test_errors_stop_the_climb_and_an_invalid_probe_makes_the_capacity_invalid():
    def erring(point: LoadPoint) -> Probed:
        value = point.settings["concurrency"]
        return Probed(PointVerdict("pass"), error_share=0.4 if value >= 4 else 0.0)

    cap = search(capacity_point(), erring)
    assert [(p.value, p.status) for p in cap.probes] == [
        (1, "pass"),
        (2, "pass"),
        (4, "errors"),
        (3, "pass"),
    ] and (
        cap.value,
        cap.ceiling,
    ) == (3, 4)
    assert cap.probes[2].reason == "error share 40% over 5%"

    def starving(point: LoadPoint) -> Probed:
        value = point.settings["concurrency"]
        return Probed(
            PointVerdict("invalid", invalid=["the client was busy 95% of the window"])
            if value >= 4
            else PointVerdict("pass")
        )

    result = evaluate_capacity(capacity_point(), starving)
    assert result.verdict.status == "invalid" and result.verdict.invalid == [
        "probe at concurrency 4: the client was busy 95% of the window"
    ]
    assert (
        result.capacity.value == 2
        and "an invalid measurement at concurrency 4" in result.capacity.stopped
    )


def test_a_minimum_capacity_is_the_points_threshold_and_the_probes_are_judged_without_it():
    point = LoadPoint(
        "cap",
        {"mode": "closed", "requests": 30, "search": {"start": 1, "max": 64}},
        {"ttft_p99_ms": 100, "min_capacity_concurrency": 8},
    )
    assert probe_point(point, "concurrency", 4).thresholds == {"ttft_p99_ms": 100}
    measure, _ = holds_up_to(5, "concurrency")
    result = evaluate_capacity(point, measure)
    assert (
        result.verdict.status == "fail"
        and str(result.verdict.checks[0]) == "FAIL min_capacity_concurrency: 5 >= 8"
    )
    entry = result.record(target="t")
    assert (
        entry["metrics"] == {"capacity_concurrency": 5}
        and entry["workload"] == {"output_tokens": 8}
        and entry["load_point"] == "cap"
    )


def test_on_a_server_with_four_slots_the_capacity_is_four_streams(paced_server, lenient_validity):
    """Four requests generate at once and the rest queue: from five streams on, TTFT waits for a slot."""
    url = paced_server(20, 5, "--slots", "4", "--tokens", "8")
    point = LoadPoint("cap", {"mode": "closed", "requests": 40, "warmup_requests": 4, "output_tokens": 8,
                              "search": {"start": 1, "max": 16}}, {"ttft_p90_ms": 45})  # fmt: skip
    result = evaluate_capacity(
        point,
        lambda p: evaluate_point(
            # no /metrics cross-check: the search is under test, and a busy machine may make one probe invalid
            p,
            Endpoint(url, "paced-model", timeout=30),
            adapter=EndpointAdapter(),
            rules=lenient_validity,
        ),
    )
    assert [(p.value, p.status) for p in result.capacity.probes] == [
        (1, "pass"),
        (2, "pass"),
        (4, "pass"),
        (8, "fail"),
        (6, "fail"),
        (5, "fail"),
    ]
    assert result.capacity.value == 4 and result.verdict.status == "pass"
    assert result.capacity.probes[3].reason.startswith("FAIL ttft_p90_ms:")


def test_an_open_loop_over_the_servers_capacity_is_saturated(paced_server):
    """One slot serving a request in 55 ms takes 18 requests/s; offered 40/s, the queue grows for the whole run."""
    url = paced_server(20, 5, "--slots", "1", "--tokens", "8")
    point = LoadPoint(
        "cap",
        {"mode": "poisson", "rate": 40.0, "requests": 45, "warmup_requests": 0, "output_tokens": 8},
        {"ttft_p90_ms": 100000},
    )
    result = evaluate_point(
        point, Endpoint(url, "paced-model", timeout=60), adapter=registry.get("vllm")
    )
    status, reason = judge_probe(result, {"stop_error_share": 0.05, "saturation_ratio": 2.0})
    assert (
        result.verdict.status == "pass"
        and status == "saturated"
        and "the queue grew all run" in reason
    )


@pytest.mark.parametrize(("point", "message"), [
    ("{id: c, concurrency: 2, search: {start: 1, max: 8, over: rate}, thresholds: {ttft_p99_ms: 9}}",
     "a search over rate needs mode poisson"),
    ("{id: c, mode: poisson, search: {start: 4, max: 2}, thresholds: {ttft_p99_ms: 9}}", "max (2) is below start (4)"),
    ("{id: c, concurrency: 2, thresholds: {min_capacity_rps: 9}}", "a capacity threshold needs a search"),
    ("{id: c, mode: poisson, search: {start: 1, max: 8}, thresholds: {min_capacity_concurrency: 9}}",
     "this search is over rate"),
])  # fmt: skip
def test_a_bad_search_is_refused_naming_the_key(tmp_path, point: str, message: str):
    path = tmp_path / "p.yaml"
    path.write_text(
        f"name: p\nhardware: {{accelerator: cpu}}\nmodels:\n  tiny:\n    load_points:\n      - {point}\n"
    )
    with pytest.raises(ProfileError, match="models.tiny.load_points"):
        try:
            load_profile(path)
        except ProfileError as exc:
            assert message in str(exc), str(exc)
            raise


def _capacity_session(pytester, paced_server, requests: int, point: str) -> str:
    """A paced server of two slots and a profile whose one load point ``point`` searches for capacity; its URL."""
    url = paced_server(20, 5, "--slots", "2", "--tokens", "8")
    copy_suite(pytester)
    (pytester.path / "cap.yaml").write_text(
        "name: cap\nhardware: {accelerator: cpu}\nvalidity: {max_client_busy: 2.0, max_loop_lag_p99_ms: 10000,"
        " max_schedule_lag_p99_ms: 10000}\ndefaults: {api: chat, output_tokens: 8, input_tokens: 16,"
        f" warmup_requests: 2, requests: {requests}}}\nmodels:\n  tiny:\n    load_points:\n      - {point}\n"
    )
    return url


def test_the_suite_records_a_capacity_point_and_the_gate_compares_it(pytester, paced_server):
    url = _capacity_session(
        pytester,
        paced_server,
        30,
        "{id: streams, search: {start: 1, max: 8}, thresholds: {ttft_p90_ms: 45, min_capacity_concurrency: 2}}",
    )
    result = run_suite(pytester, url, "--slo=cap.yaml", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*load point streams: PASS: capacity 2, below 3*",
            "*concurrency 4: fail: FAIL ttft_p90_ms*",
        ]
    )
    entry = json.loads((pytester.path / "report" / "results.json").read_text())["slo"][0]
    assert (
        entry["metrics"] == {"capacity_concurrency": 2}
        and entry["capacity"]["value"] == 2
        and entry["capacity"]["ceiling"] == 3
    )
    assert [p["value"] for p in entry["capacity"]["probes"]] == [1, 2, 4, 3] and entry["workload"][
        "output_tokens"
    ] == 8


def test_an_interleaved_session_records_its_search_unsliced(pytester, paced_server):
    """A capacity search probes each target in turn, whole probes: its record says 1 slice, not the option's 5."""
    url = _capacity_session(
        pytester,
        paced_server,
        20,
        "{id: streams, search: {start: 1, max: 2}, thresholds: {ttft_p90_ms: 45}}",
    )
    pytester.runpytest("slo", "-m", "slo", f"--infer-endpoint=a={url}", f"--infer-endpoint=b={url}",
                       "--infer-framework=vllm", "--infer-report-dir=report",
                       "-p", "no:cacheprovider", "--slo=cap.yaml",
                       "--slo-interleave").assert_outcomes(passed=2)  # fmt: skip
    entries = json.loads((pytester.path / "report" / "results.json").read_text())["slo"]
    assert [e["interleaved"]["slices"] for e in entries] == [1, 1] and all(
        "capacity" in e for e in entries
    )


def test_one_slow_moment_at_the_end_is_no_saturation():
    from pytest_infer.load.trace import RequestTrace
    from pytest_infer.slo.profiles.capacity import saturation

    def run_of(ttfts_ms: list[float]) -> Any:
        traces = [
            RequestTrace(
                i,
                sent_ns=i * 10**8,
                event_ns=[i * 10**8 + int(ms * 1e6)],
                end_ns=i * 10**8 + 10**9,
                status=200,
            )
            for i, ms in enumerate(ttfts_ms)
        ]
        return type("Run", (), {"measured": traces})()

    growing = Probed(PointVerdict("pass"), runs=[run_of([10, 11, 12, 20, 22, 24, 40, 44, 48])])
    spike = Probed(PointVerdict("pass"), runs=[run_of([10, 11, 12, 9, 10, 11, 40, 44, 48])])
    assert saturation(growing) == pytest.approx(44 / 11) and saturation(spike) is None  # type: ignore[arg-type]
