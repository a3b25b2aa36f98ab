"""Load from several client processes (same host) and from Ray actors (a local Ray cluster), against
the paced server: the merged run is the single client's load, on one clock, with exact percentiles."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import statistics
import time
from collections.abc import Iterator

import httpx
import pytest

from pytest_infer.client.endpoint import Endpoint
from pytest_infer.load import DistributedRun, LoadSpec, Workload, run_load, run_load_distributed
from pytest_infer.load.distributed import (
    ClockOffset,
    _Part,
    clock_offset,
    merge,
    process_specs,
    split,
)
from pytest_infer.load.monitor import ClientUsage, ResourcePeak
from pytest_infer.load.patterns import LoadRun
from pytest_infer.load.prompts import Calibration
from pytest_infer.load.trace import RequestTrace
from pytest_infer.slo.metrics import summarize
from pytest_infer.slo.metrics.catalogue import metric

FIXED = Calibration(1.0, 0.0, "fixed for the test")


def served(url: str) -> list[dict]:
    return httpx.get(f"{url}/stats", timeout=10).json()["requests"]


def _child_clock(conn) -> None:
    while conn.recv():
        conn.send(time.perf_counter_ns())


def test_processes_on_one_host_share_one_monotonic_clock():
    """The claim the same-host merge rests on: a child's perf_counter_ns lies between the parent's before and after."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child_clock, args=(child,))
    proc.start()
    try:
        for _ in range(50):
            before = time.perf_counter_ns()
            parent.send(True)
            theirs = parent.recv()
            after = time.perf_counter_ns()
            assert before <= theirs <= after
        offset = clock_offset(lambda: (parent.send(True), parent.recv())[1])
        assert abs(offset.offset_ns) <= offset.uncertainty_ns
    finally:
        parent.send(False)
        proc.join(10)


def test_a_clock_offset_is_found_within_half_the_fastest_round_trip():
    now = [0]

    def clock() -> int:
        return now[0]

    def remote() -> int:  # 7 s ahead; the way out takes 3 us, the way back 1-50 us
        now[0] += 3_000
        seen = now[0] + 7_000_000_000
        now[0] += random.randint(1_000, 50_000)
        return seen

    found = clock_offset(remote, rounds=40, clock=clock)
    assert abs(found.offset_ns - 7_000_000_000) <= found.uncertainty_ns < 30_000


def test_the_load_divides_into_whole_shares():
    assert split(10, [1, 1, 1]) == [4, 3, 3] and sum(split(7, [5, 3])) == 7
    specs = process_specs(LoadSpec(concurrency=5, requests=21, warmup_requests=5), 2)
    assert (
        [s.concurrency for s in specs] == [3, 2]
        and [s.requests for s in specs] == [13, 8]
        and [s.warmup_requests for s in specs] == [3, 2]
    )
    assert (
        len(process_specs(LoadSpec(concurrency=2, requests=10), 8)) == 2
    )  # never more processes than streams
    assert (
        len(process_specs(LoadSpec(concurrency=8, requests=3), 8)) == 3
    )  # ... or measured requests
    assert [
        s.requests for s in process_specs(LoadSpec(concurrency=4, requests=None, duration_s=1.0), 2)
    ] == [
        None,
        None,
    ]
    open_loop = process_specs(LoadSpec(mode="poisson", rate=10, requests=50, max_in_flight=9), 2)
    assert [(s.requests, s.max_in_flight) for s in open_loop] == [
        (50, 5),
        (50, 5),
    ]  # the schedule stays whole


def _run(
    traces: list[RequestTrace], lag: list[float], busy: float, start: int, end: int
) -> LoadRun:
    return LoadRun(
        spec=LoadSpec(concurrency=1, requests=1),
        workload=Workload(),
        traces=traces,
        window_start_ns=start,
        window_end_ns=end,
        loop_lag_ms=lag,
        client=ClientUsage(1.0, busy, 0.0),
        resources=ResourcePeak(),
        calibration=FIXED,
    )


def test_the_merged_run_carries_every_trace_on_the_drivers_clock_and_the_worst_monitors():
    a = _run([RequestTrace(0, sent_ns=100, event_ns=[150], end_ns=160)], [1.0] * 200, 0.9, 100, 160)
    b = _run(
        [
            RequestTrace(0, sent_ns=1_090, event_ns=[1_140], end_ns=1_200),
            RequestTrace(1, "cooldown", sent_ns=1_210),
        ],
        [0.1] * 150 + [30.0] * 50,
        0.4,
        1_090,
        1_200,
    )
    clocks = [ClockOffset(), ClockOffset(1_000, 5, applied=True)]
    run = merge(
        LoadSpec(concurrency=2, requests=2),
        Workload(),
        [_Part(0, "h0", 1, a), _Part(1, "h1", 2, b)],
        clocks,
        calibration=FIXED,
    )
    assert [(t.index, t.sent_ns) for t in run.traces] == [
        (0, 90),
        (1, 100),
        (2, 210),
    ]  # on the driver's clock, in send order
    assert run.traces[0].event_ns == [140] and run.traces[0].end_ns == 200
    assert (run.window_start_ns, run.window_end_ns) == (90, 200)
    assert run.loop_lag_ms == b.loop_lag_ms  # the worse p99
    assert run.client.busy_share == 0.9  # the busier process
    assert [p.requests for p in run.processes] == [1, 1] and run.clock_uncertainty_ms == 5e-6
    assert run.describe()["client_processes"]["processes"][1]["clock_offset_applied"] is True


def test_two_processes_run_one_closed_loop(paced_server):
    url = paced_server(5, 2)
    spec = LoadSpec(concurrency=8, requests=48, warmup_requests=8)
    run = run_load_distributed(
        Endpoint(url, "paced-model"),
        spec,
        Workload(output_tokens=6, ignore_eos=False),
        processes=2,
        calibration=FIXED,
    )
    assert len(run.processes) == 2 and len({p.pid for p in run.processes} | {os.getpid()}) == 3
    assert [p.requests for p in run.processes] == [24, 24] and all(
        p.clock.offset_ns == 0 and not p.clock.applied for p in run.processes
    )
    phases = [t.phase for t in run.traces]
    assert phases.count("warmup") == 8 and phases.count("measured") == 48
    assert all(t.ok and t.client_tokens == 6 for t in run.measured)
    assert all(t.ok for t in run.traces if t.phase == "cooldown")  # drained
    assert run.window_start_ns <= min(t.sent_ns for t in run.measured) and run.window_end_ns == max(
        t.end_ns for t in run.measured
    )
    # cool-down held the load: as the last measured request ended, both processes had streams busy (request i is process
    # i % 2's)
    at = run.window_end_ns - 1_000_000
    assert {t.index % 2 for t in run.traces if t.sent_ns <= at < (t.end_ns or 0)} == {0, 1}
    # one clock: every client event comes after the server wrote it
    server_first = sorted(r["first_content_ns"] for r in served(url))
    client_first = sorted(t.event_ns[0] for t in run.traces if t.event_ns)
    assert len(server_first) == len(client_first) and all(
        c >= s for c, s in zip(client_first, server_first)
    )
    assert len(run.loop_lag_ms) > 0 and run.client.window_s > 0


def test_two_processes_send_the_single_clients_open_loop_schedule(paced_server):
    url = paced_server(5, 2)
    spec = LoadSpec(mode="poisson", rate=60, requests=30, warmup_requests=5, seed=7)
    run = run_load_distributed(
        Endpoint(url, "paced-model"),
        spec,
        Workload(output_tokens=3, ignore_eos=False),
        processes=2,
        calibration=FIXED,
    )
    # Warm-up and measured arrivals are the schedule's first 35, none missing. Cool-down goes on
    # until every process's measured requests have ended, which each process sees at its own time:
    # a process its CPU starved may wake past its next arrival after the end and not send it, while
    # the other sent a later one, so cool-down indices may skip (index 36 did at 4 workers on 2 cores).
    indices = [t.index for t in run.traces]
    assert indices[:35] == list(range(35)) and indices == sorted(set(indices)), indices
    rng = random.Random(7)
    schedule = list(
        itertools.accumulate(int(rng.gammavariate(1.0, 1e9 / 60)) for _ in range(indices[-1] + 1))
    )
    intended = [t.intended_ns for t in run.traces]
    start = intended[0] - schedule[0]
    assert [x - start for x in intended] == [
        schedule[i] for i in indices
    ]  # the single client's, gap for gap
    assert [t.phase for t in run.traces[:35]] == ["warmup"] * 5 + ["measured"] * 30 and {
        t.phase for t in run.traces[35:]
    } <= {"cooldown"}
    lags = summarize(run.traces, run.window_start_ns, run.window_end_ns).samples[
        metric("schedule_lag")
    ]
    assert len(lags) == 30 and all(lag >= 0 for lag in lags)
    assert sorted(p.requests for p in run.processes) == [15, 15]


def test_a_failing_process_fails_the_run(paced_server):
    url = paced_server(5, 2)
    with pytest.raises(RuntimeError, match="ValueError: transport"):
        run_load_distributed(
            Endpoint(url, "paced-model"),
            LoadSpec(concurrency=2, requests=4),
            Workload(output_tokens=2),
            processes=2,
            calibration=FIXED,
            transport="bogus",
        )


def _errors(url: str, run: LoadRun) -> dict[str, float]:
    """Client median minus the server's own median (from its write timestamps), over the measured requests."""
    measured = [t for t in run.measured if t.ok]
    lo, hi = min(t.sent_ns for t in measured), max(t.sent_ns for t in measured)
    records = [
        r for r in served(url) if lo <= r["recv_ns"] <= hi + 5_000_000 and r["first_content_ns"]
    ]
    return {
        "ttft": (
            statistics.median((t.event_ns[0] - t.sent_ns) / 1e6 for t in measured)
            - statistics.median((r["first_content_ns"] - r["recv_ns"]) / 1e6 for r in records)
        ),
        "itl": (
            statistics.median(
                (b - a) / 1e6 for t in measured for a, b in zip(t.event_ns, t.event_ns[1:])
            )
            - statistics.median(
                (b - a) / 1e6 for r in records for a, b in zip(r["write_ns"], r["write_ns"][1:])
            )
        ),
    }


def single_then_distributed(url: str, **distributed) -> tuple[dict, DistributedRun]:
    """One client's errors against the server's truth, then a distributed run of the same load on the reset server."""
    endpoint, workload = (
        Endpoint(url, "paced-model"),
        Workload(api="completions", output_tokens=16, ignore_eos=False),
    )
    spec = LoadSpec(concurrency=16, requests=64, warmup_requests=16)
    httpx.post(f"{url}/reset", timeout=10)
    single = _errors(url, run_load(endpoint, spec, workload, calibration=FIXED))
    httpx.post(f"{url}/reset", timeout=10)
    return single, run_load_distributed(endpoint, spec, workload, calibration=FIXED, **distributed)


def test_two_processes_measure_what_one_client_measures(paced_server):
    """The merged percentiles against the server's truth, as a single client's are (a light load: both within a few ms;
    a clock merged wrongly would be off by far more)."""
    url = paced_server(50, 10)
    single, run = single_then_distributed(url, processes=2)
    double = _errors(url, run)
    assert abs(single["ttft"]) < 10 and abs(double["ttft"]) < 10, (single, double)
    assert abs(single["itl"]) < 1 and abs(double["itl"]) < 1, (single, double)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.integration  # it measures against the paced server: away from the parallel fast lane
@pytest.mark.measures
@pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning"
)  # Ray's own
def test_ray_actors_on_a_local_cluster_measure_what_one_client_measures(paced_server, local_ray):
    url = paced_server(50, 10)
    # offsets applied although the actors share this host's clock: the measured offset must be ~0 within its uncertainty
    single, run = single_then_distributed(
        url, processes=2, ray_address="auto", apply_clock_offsets=True
    )
    assert (
        run.how == "ray"
        and len(run.processes) == 2
        and all(p.node and p.pid != os.getpid() for p in run.processes)
    )
    for p in run.processes:
        assert (
            p.clock.applied
            and 0 < p.clock.uncertainty_ns < 5_000_000
            and abs(p.clock.offset_ns) <= p.clock.uncertainty_ns + 200_000
        ), p.clock
    assert [t.phase for t in run.traces].count("measured") == 64 and all(t.ok for t in run.measured)
    ray_errors = _errors(url, run)
    margin = 1 + run.clock_uncertainty_ms
    assert abs(single["ttft"]) < 10 and abs(ray_errors["ttft"]) < 10 + margin, (single, ray_errors)
    assert abs(ray_errors["itl"]) < 1, ray_errors


@pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning"
)  # Ray's own
def test_ray_open_loop_is_the_single_clients_schedule(paced_server, local_ray):
    url = paced_server(5, 2)
    spec = LoadSpec(mode="poisson", rate=60, requests=20, warmup_requests=4, seed=3)
    run = run_load_distributed(
        Endpoint(url, "paced-model"),
        spec,
        Workload(output_tokens=3, ignore_eos=False),
        processes=2,
        ray_address="auto",
        calibration=FIXED,
    )
    # each request was sent at its place in the one schedule; cool-down arrivals after the measured ones end when the
    # run does, so a process may stop before an index the other one already sent: compare by index, not by neighbour
    intended = {t.index: t.intended_ns for t in run.traces}
    assert set(range(24)) <= set(intended)  # every warm-up and measured arrival
    rng = random.Random(3)
    schedule = list(
        itertools.accumulate(int(rng.gammavariate(1.0, 1e9 / 60)) for _ in range(max(intended) + 1))
    )
    assert {i: at - intended[0] for i, at in intended.items()} == {
        i: schedule[i] - schedule[0] for i in intended
    }
    assert [t.phase for t in run.traces].count("measured") == 20 and all(
        p.clock.applied is False for p in run.processes
    )  # one host: not applied
