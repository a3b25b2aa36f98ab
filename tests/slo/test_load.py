"""The load client against servers whose behaviour is known: the paced server (timing ground
truth) and the programmable fake server (errors, framing faults)."""

from __future__ import annotations

import random
import statistics
import time

import pytest

from pytest_infer.adapters import registry
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.load import LoadSpec, Workload, run_load
from pytest_infer.load.prompts import Calibration
from pytest_infer.slo.metrics import summarize
from pytest_infer.slo.metrics.catalogue import metric
from pytest_infer.slo.metrics.judge import judge
from pytest_infer.testing.fakeserver import Deviation, FakeServer

from .conftest import server_stats

FIXED = Calibration(1.0, 0.0, "fixed for the test")


def test_closed_loop_phases_and_counts(paced_server):
    url = paced_server(5, 2)
    run = run_load(
        Endpoint(url, "paced-model"),
        LoadSpec(concurrency=4, requests=20, warmup_requests=4),
        Workload(output_tokens=4, ignore_eos=False),
        calibration=FIXED,
    )
    phases = [t.phase for t in run.traces]
    assert (
        phases[:4] == ["warmup"] * 4
        and phases[4:24] == ["measured"] * 20
        and set(phases[24:]) <= {"cooldown"}
    )
    assert all(
        t.ok and t.done and t.client_tokens == 4 == t.usage_completion_tokens for t in run.measured
    )
    cooldown = [t for t in run.traces if t.phase == "cooldown"]
    assert 1 <= len(cooldown) <= 4 and all(
        t.ok for t in cooldown
    )  # drained: each finished, none runs on
    first, last = min(t.sent_ns for t in run.measured), max(t.end_ns for t in run.measured)
    assert run.window_start_ns <= first and run.window_end_ns == last


def test_timings_match_the_paced_servers_schedule(paced_server):
    """Role chunk at once, first token after 80 ms, then one every 20 ms: TTFT excludes the role chunk."""
    url = paced_server(80, 20)
    run = run_load(
        Endpoint(url, "paced-model"),
        LoadSpec(concurrency=2, requests=10, warmup_requests=2),
        Workload(output_tokens=6, ignore_eos=False),
        calibration=FIXED,
    )
    s = summarize(run.traces, run.window_start_ns, run.window_end_ns)
    served = server_stats(url)  # every request the server saw, warm-up included
    assert s.ok == 10 and len(served) >= 10
    ttft, ttfb, itl = (
        statistics.median(s.samples[metric("ttft")]),
        statistics.median(s.samples[metric("ttfb")]),
        statistics.median(s.samples[metric("itl")]),
    )
    # never earlier than the server's schedule; later only by the client's (and the host's) delay
    assert 80 <= ttft < 80 + 40, s.figures()
    assert ttfb < ttft - 40, (
        "the role-only chunk came at once; TTFB must not wait for the first token"
    )
    assert 20 - 5 < itl < 20 + 15
    # client and server clocks are the same monotonic clock: every client event is after its write
    server_first = sorted(r["first_content_ns"] for r in server_stats(url))
    client_first = sorted(t.event_ns[0] for t in run.traces if t.event_ns)
    assert all(c >= s for c, s in zip(client_first, server_first[: len(client_first)]))


def test_poisson_arrivals_follow_the_seeded_schedule(paced_server):
    url = paced_server(5, 2)
    spec = LoadSpec(mode="poisson", rate=40, requests=30, warmup_requests=5, seed=7)
    run = run_load(
        Endpoint(url, "paced-model"),
        spec,
        Workload(output_tokens=3, ignore_eos=False),
        calibration=FIXED,
    )
    rng = random.Random(7)
    gaps = [int(rng.gammavariate(1.0, 1e9 / 40)) for _ in range(35)]
    intended = [t.intended_ns for t in run.traces[:35]]
    assert [b - a for a, b in zip(intended, intended[1:])] == gaps[1:35]
    lags = summarize(run.traces, run.window_start_ns, run.window_end_ns).samples[
        metric("schedule_lag")
    ]
    assert len(lags) == 30 and all(lag >= 0 for lag in lags)


def test_duration_bounds_the_measured_part(paced_server):
    url = paced_server(5, 5)
    run = run_load(
        Endpoint(url, "paced-model"),
        LoadSpec(concurrency=2, requests=None, duration_s=0.4, warmup_requests=2),
        Workload(output_tokens=4, ignore_eos=False),
        calibration=FIXED,
    )
    assert len(run.measured) >= 4
    assert all(t.sent_ns - run.window_start_ns <= 0.45e9 for t in run.measured)
    # The window ends at the last measured completion, which may fall just before the deadline
    # (when every worker is between requests as it passes); issuing measured requests stops only after it.
    assert run.window_end_ns == max(t.end_ns for t in run.measured)
    cooldown = [t for t in run.traces if t.phase == "cooldown"]
    assert cooldown and min(t.sent_ns for t in cooldown) - run.window_start_ns > 0.4e9


@pytest.mark.parametrize("transport", ["raw", "httpx"])
def test_server_errors_count_as_failed_requests(transport):
    deviation = Deviation(
        request=lambda path, body: (
            (503, {"error": {"message": "overloaded"}}) if body.get("stream") else None
        )
    )
    with FakeServer(deviation) as srv:
        spec = LoadSpec(concurrency=2, requests=6, warmup_requests=0)
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            spec,
            Workload(output_tokens=4, ignore_eos=False),
            calibration=FIXED,
            transport=transport,
        )
    s = summarize(run.traces, run.window_start_ns, run.window_end_ns)
    assert (s.requests, s.ok) == (6, 0)
    assert s.errors and s.errors[0].startswith("HTTP 503:") and "overloaded" in s.errors[0]
    verdict = judge(s, {"max_error_share": 0.0})
    assert verdict.status == "fail" and verdict.failures[0].measured == 1.0


@pytest.mark.parametrize("transport", ["raw", "httpx"])
def test_both_transports_read_the_fake_server_alike(transport):
    with FakeServer() as srv:
        spec = LoadSpec(concurrency=2, requests=5, warmup_requests=1)
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            spec,
            Workload(output_tokens=7, ignore_eos=False),
            calibration=FIXED,
            transport=transport,
        )
    assert all(
        t.ok and t.done and t.client_tokens == 7 == t.usage_completion_tokens for t in run.measured
    )


def _raw_writer(parts: list[bytes], pause: float = 0.02):
    def raw_stream(path, body, handler):
        handler.close_connection = True
        for part in parts:
            handler.wfile.write(part)
            handler.wfile.flush()
            time.sleep(pause)

    return Deviation(raw_stream=raw_stream)


def _sse(*payloads: str) -> bytes:
    return b"".join(f"data: {p}\n\n".encode() for p in payloads)


CHUNKS = [
    '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
    '{"choices":[{"index":0,"delta":{"content":"a"}}]}',
    '{"choices":[{"index":0,"delta":{"content":"b"}}]}',
    '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}',
]


def test_raw_transport_decodes_chunked_bodies_split_anywhere():
    body = _sse(*CHUNKS, "[DONE]")
    chunked = (
        b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 37]), body[i : i + 37])
            for i in range(0, len(body), 37)
        )
        + b"0\r\n\r\n"
    )
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    wire = head + chunked
    parts = [
        wire[i : i + 11] for i in range(0, len(wire), 11)
    ]  # reads cut through size lines and CRLFs
    with FakeServer(_raw_writer(parts, 0.001)) as srv:
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            LoadSpec(concurrency=1, requests=1, warmup_requests=0),
            Workload(output_tokens=2, ignore_eos=False),
            calibration=FIXED,
            transport="raw",
        )
    t = run.measured[0]
    assert (
        t.ok
        and t.done
        and t.event_tokens == [1, 1]
        and t.usage_completion_tokens == 2
        and t.usage_prompt_tokens == 3
    )


def test_stream_without_done_ends_at_the_body_end_and_is_counted():
    body = _sse(*CHUNKS)  # no [DONE], like transformers serve 5.24
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection:"
        " close\r\n\r\n".encode()
    )
    with FakeServer(_raw_writer([head, body])) as srv:
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            LoadSpec(concurrency=1, requests=2, warmup_requests=0),
            Workload(output_tokens=2, ignore_eos=False),
            calibration=FIXED,
            transport="raw",
        )
    s = summarize(run.traces, run.window_start_ns, run.window_end_ns)
    assert s.ok == 2 and s.figures()["streams_without_done"] == 2


def test_close_delimited_body_and_a_cut_stream():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    with FakeServer(_raw_writer([head, _sse(*CHUNKS, "[DONE]")])) as srv:
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            LoadSpec(concurrency=1, requests=1, warmup_requests=0),
            Workload(output_tokens=2, ignore_eos=False),
            calibration=FIXED,
            transport="raw",
        )
    assert run.measured[0].ok and run.measured[0].done
    chunked_head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    cut = _sse(*CHUNKS[:2])
    with FakeServer(
        _raw_writer([chunked_head, b"%x\r\n%s\r\n" % (len(cut), cut)])
    ) as srv:  # no closing 0-chunk
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            LoadSpec(concurrency=1, requests=1, warmup_requests=0),
            Workload(output_tokens=2, ignore_eos=False),
            calibration=FIXED,
            transport="raw",
        )
    t = run.measured[0]
    assert not t.ok and "closed the connection mid-response" in t.error and t.event_tokens == [1]


def test_prompt_length_is_calibrated_against_the_servers_usage():
    with FakeServer() as srv:  # one token per character
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            LoadSpec(concurrency=1, requests=6, warmup_requests=0),
            Workload(input_tokens=300, output_tokens=2, ignore_eos=False),
        )
    assert run.calibration.source == "server usage"
    prompt = statistics.mean(t.usage_prompt_tokens for t in run.measured)
    assert 300 * 0.95 < prompt < 300 * 1.05


def test_repeated_runs_give_confidence_intervals(paced_server):
    from pytest_infer.slo.profiles import LoadPoint
    from pytest_infer.slo.profiles.evaluate import evaluate_point

    url = paced_server(20, 5)
    point = LoadPoint(
        "r",
        {"concurrency": 2, "requests": 6, "warmup_requests": 1, "output_tokens": 4, "repeat": 3},
        {"ttft_p50_ms": 5000},
    )
    result = evaluate_point(point, Endpoint(url, "paced-model"), adapter=registry.get("vllm"))
    assert len(result.runs) == 3 and result.summary.requests == 18  # pooled
    assert set(result.confidence) == {
        "output_tokens_per_s",
        "ttft_p50_ms",
        "tpot_p50_ms",
        "e2e_p50_ms",
    }
    assert "95% CI, 3 runs" in result.confidence["ttft_p50_ms"]
    record = result.record(target="t")
    assert record["repeat"] == 3 and len(record["runs"]) == 3 and record["runs"][0]["requests"] == 6


def test_interleaved_targets_take_turns_run_by_run(paced_server):
    """A B B A A B B A: each target's runs are spread over the same stretch of time, so neither runs
    in the machine's later (or quieter) part alone; and each target is judged on its own runs."""
    from pytest_infer.slo.profiles import LoadPoint
    from pytest_infer.slo.profiles.evaluate import Subject, evaluate_interleaved

    point = LoadPoint(
        "r",
        {"concurrency": 1, "requests": 3, "warmup_requests": 0, "output_tokens": 2, "repeat": 4},
        {"ttft_p50_ms": 5000},
    )
    fast, slow = paced_server(5, 1), paced_server(40, 1)
    results = evaluate_interleaved(
        [
            Subject(point, Endpoint(fast, "paced-model"), registry.get("vllm")),
            Subject(point, Endpoint(slow, "paced-model"), registry.get("vllm")),
        ]
    )
    starts = sorted(
        (run.window_start_ns, name) for name, result in zip("AB", results) for run in result.runs
    )
    assert "".join(name for _, name in starts) == "ABBAABBA"
    assert [len(r.runs) for r in results] == [4, 4]
    assert results[0].summary.requests == results[1].summary.requests == 12
    assert results[0].per_run[0]["ttft_p50_ms"] < 30 < results[1].per_run[0]["ttft_p50_ms"]


def test_interleaved_slices_take_turns_within_each_run(paced_server):
    """With slices, run i of each target is cut into parts that alternate (A B B A by part), so both
    runs span the same stretch of time; each run's figures pool its parts and its window is theirs
    added up, not the stretch the other target's parts also took."""
    from pytest_infer.slo.profiles import LoadPoint
    from pytest_infer.slo.profiles.evaluate import Subject, evaluate_interleaved

    point = LoadPoint(
        "r",
        {"concurrency": 1, "requests": 6, "warmup_requests": 0, "output_tokens": 2, "repeat": 2},
        {"ttft_p50_ms": 5000},
    )
    fast, slow = paced_server(5, 1), paced_server(40, 1)
    results = evaluate_interleaved(
        [
            Subject(point, Endpoint(fast, "paced-model"), registry.get("vllm")),
            Subject(point, Endpoint(slow, "paced-model"), registry.get("vllm")),
        ],
        slices=3,
    )
    sent = sorted(
        (t.sent_ns, name)
        for name, result in zip("AB", results)
        for run in result.runs
        for t in run.traces
    )
    assert (
        "".join(name for _, name in sent) == "AABBBBAAAABB" + "BBAAAABBBBAA"
    )  # two requests a part, the turns running on across runs
    assert [len(r.runs) for r in results] == [2, 2] and [len(r.per_run) for r in results] == [2, 2]
    assert all(
        run.spec.requests == 6 and [t.index for t in run.traces] == list(range(6))
        for r in results
        for run in r.runs
    )
    first_a = results[0].runs[0]
    span = (
        max(t.end_ns or 0 for t in first_a.traces) - min(t.sent_ns for t in first_a.traces)
    ) / 1e9
    assert first_a.window_s < span  # B's parts ran in between and are not A's time
    assert results[0].per_run[0]["ttft_p50_ms"] < 30 < results[1].per_run[0]["ttft_p50_ms"]
    # each part's own figures, in order, for the gate to pair slice by slice
    assert [len(r.per_slice) for r in results] == [6, 6] and all(
        part["requests"] == 2 for r in results for part in r.per_slice
    )
    assert (
        max(p["ttft_p50_ms"] for p in results[0].per_slice)
        < 30
        < min(p["ttft_p50_ms"] for p in results[1].per_slice)
    )
    assert results[0].record()["slices"] == results[0].per_slice
    whole = evaluate_interleaved(
        [Subject(point, Endpoint(fast, "paced-model"), registry.get("vllm"))], slices=1
    )[0]
    assert whole.per_slice == [] and "slices" not in whole.record()


def test_slices_split_requests_and_rewarm_each_part():
    from pytest_infer.slo.profiles.evaluate import sliced

    parts = sliced(LoadSpec(concurrency=2, requests=10, warmup_requests=8), 3)
    assert [(p.requests, p.warmup_requests) for p in parts] == [(4, 8), (3, 2), (3, 2)]
    assert len(sliced(LoadSpec(requests=2), 5)) == 2  # never an empty part
    assert [p.duration_s for p in sliced(LoadSpec(requests=None, duration_s=3.0), 3)] == [
        1.0,
        1.0,
        1.0,
    ]
    assert sliced(LoadSpec(requests=10), 1) == [LoadSpec(requests=10)]
    replay = LoadSpec(mode="replay", requests=None, duration_s=5.0)
    assert sliced(replay, 4) == [replay]


def test_window_ends_at_the_last_measured_completion_even_before_the_deadline(monkeypatch):
    """The deadline bounds issuing; the window (throughput's denominator) ends when the last measured request did."""
    from pytest_infer.load import patterns
    from pytest_infer.load.trace import RequestTrace

    clock = iter(
        [0, 400_010_000]
    )  # first measured request issued at 0; the next phase check just past 0.4 s
    monkeypatch.setattr(patterns.time, "perf_counter_ns", lambda: next(clock))
    runner = patterns._Runner(
        None,
        LoadSpec(concurrency=1, requests=None, duration_s=0.4, warmup_requests=0),
        Workload(),
        lambda i: {},
    )
    first = RequestTrace(0, runner.phase(0))
    first.end_ns = 399_990_000
    runner.traces.append(first)
    runner.window_end_ns = first.end_ns
    assert runner.phase(1) == "cooldown" and runner.done.is_set()
    assert (runner.window_end_ns - runner.window_start_ns) / 1e9 < 0.4


def test_a_kept_connection_the_server_closed_while_idle_loses_no_request():
    """llama-server b11312 closes the connection after each streamed answer though its headers offer keep-alive (no
    ``Connection: close``): the next request written on it meets a closed socket before any byte of an answer. It
    never ran, so it goes again on a fresh connection; before, every second request was counted as an error."""
    body = _sse(*CHUNKS, "[DONE]")
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    wire = head + b"%x\r\n%s\r\n" % (len(body), body) + b"0\r\n"
    with FakeServer(
        _raw_writer([wire, b"\r\n"], pause=0.05)
    ) as srv:  # the last CRLF late, then the close
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            LoadSpec(concurrency=1, requests=6, warmup_requests=0),
            Workload(output_tokens=2, ignore_eos=False),
            calibration=FIXED,
            transport="raw",
        )
    assert [t.error for t in run.measured] == [None] * 6 and all(
        t.ok and t.done for t in run.measured
    )
