"""The gate-accuracy benchmark's fault proxy changes exactly what each fault names, and nothing when it has none."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from fault_proxy import FAULTS, FaultProxy, fault_named  # noqa: E402

from pytest_infer.testing.fakeserver import FakeServer  # noqa: E402

CHAT = "/v1/chat/completions"


def chat(client: httpx.Client, **params) -> httpx.Response:
    return client.post(
        CHAT, json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, **params}
    )


def stream(client: httpx.Client, **params) -> list[str]:
    body = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8,
        "stream": True,
        **params,
    }
    with client.stream("POST", CHAT, json=body) as resp:
        return [line[5:].strip() for line in resp.iter_lines() if line.startswith("data:")]


@pytest.fixture
def upstream():
    with FakeServer() as server:
        yield server


def proxied(upstream: FakeServer, fault: str):
    return FaultProxy(upstream.base_url, fault_named(fault))


def test_no_fault_passes_answers_and_streams_through_unchanged(upstream):
    with (
        proxied(upstream, "none") as proxy,
        httpx.Client(base_url=proxy.base_url) as client,
        httpx.Client(base_url=upstream.base_url) as direct,
    ):
        assert chat(client, temperature=0).json()["choices"] == chat(direct, temperature=0).json()["choices"]
        assert stream(client, temperature=0)[-1] == "[DONE]"
        assert chat(client, temperature=5).status_code == 400


def test_stream_faults_drop_the_terminator_or_the_usage_chunk(upstream):
    with proxied(upstream, "stream-no-done") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        events = stream(client)
        assert events and "[DONE]" not in events
    with proxied(upstream, "stream-no-usage") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        events = [json.loads(e) for e in stream(client, stream_options={"include_usage": True}) if e != "[DONE]"]
        assert events and not any(e.get("usage") and not e.get("choices") for e in events)


def test_request_faults_accept_bad_ranges_and_ignore_n(upstream):
    with proxied(upstream, "ranges-not-validated") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert chat(client, temperature=5).status_code == 200
    with proxied(upstream, "n-ignored") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert len(chat(client, n=3).json()["choices"]) == 1


def test_answer_faults_change_errors_logprobs_and_structured_strings(upstream):
    with proxied(upstream, "error-envelope-flat") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        resp = chat(client, temperature=5)
        assert resp.status_code == 400 and "error" not in resp.json() and resp.json()["detail"]
    with proxied(upstream, "errors-as-500") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert chat(client, temperature=5).status_code == 500
    with proxied(upstream, "logprobs-dropped") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert chat(client, logprobs=True).json()["choices"][0]["logprobs"] is None
    schema = {"type": "string", "maxLength": 3}
    rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    with proxied(upstream, "maxlength-loosened") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert json.loads(chat(client, response_format=rf).json()["choices"][0]["message"]["content"]) == "aaaaaa"
    with proxied(upstream, "raw-tab-in-strings") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert "\t" in chat(client, response_format=rf).json()["choices"][0]["message"]["content"]


def test_timing_faults_delay_the_first_or_every_event(upstream):
    def first_event_seconds(client: httpx.Client) -> float:
        started = time.perf_counter()
        with client.stream(
            "POST",
            CHAT,
            json={
                "model": "fake-model",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 4,
                "stream": True,
            },
        ) as resp:
            next(resp.iter_lines())
            return time.perf_counter() - started

    with proxied(upstream, "none") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        plain = min(first_event_seconds(client) for _ in range(3))
    assert plain < 0.03  # the proxy itself adds no delayed-ACK wait (TCP_NODELAY)
    with proxied(upstream, "ttft+200ms") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        assert min(first_event_seconds(client) for _ in range(3)) >= plain + 0.19
    with proxied(upstream, "itl+50ms") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        started = time.perf_counter()
        events = stream(client)
        assert time.perf_counter() - started >= 0.05 * (len(events) - 1)


def test_an_event_delay_accumulates_like_a_slower_decode_step():
    """Against a server that paces its tokens 20 ms apart, +10 ms per event must make them 30 ms apart, and so must
    x1.5 of every gap: a delay that merely shifted every event would hide inside the server's own gaps."""
    import subprocess

    from pytest_infer.server.process import free_port

    port = free_port("127.0.0.1")
    paced = subprocess.Popen([sys.executable, "-m", "pytest_infer.testing.pacedserver", "--port", str(port),
                              "--ttft-ms", "5", "--itl-ms", "20"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert "ready" in (paced.stdout.readline() if paced.stdout else "")
        body = {
            "model": "paced-model",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 12,
            "stream": True,
            "ignore_eos": True,
        }

        def gaps(fault: str) -> list[float]:
            with (
                FaultProxy(f"http://127.0.0.1:{port}", fault_named(fault)) as proxy,
                httpx.Client(base_url=proxy.base_url) as client,
            ):
                with client.stream("POST", CHAT, json=body) as resp:
                    times = [
                        time.perf_counter()
                        for line in resp.iter_lines()
                        if line.startswith("data:") and '"content"' in line
                    ]
            return [b - a for a, b in zip(times, times[1:])][1:]  # the first gap holds the first token's own timing

        plain, slowed, proportional = gaps("none"), gaps("itl+10ms"), gaps("itl*1.5")
        assert len(plain) >= 5 and len(slowed) >= 5 and len(proportional) >= 5
        # a shift of every event would leave the gaps as they were; on a busy machine each gap also carries noise
        assert (
            0.017 < statistics.median(plain) < 0.025
            and 0.005 < statistics.median(slowed) - statistics.median(plain) < 0.015
        ), (plain, slowed)
        # x1.5 of a 20 ms gap: 10 ms more each, as +10 ms is
        assert 0.005 < statistics.median(proportional) - statistics.median(plain) < 0.015, (plain, proportional)
    finally:
        paced.terminate()
        paced.wait(10)


def test_a_keyword_loosened_on_a_share_of_requests(upstream):
    rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "string", "maxLength": 3}}}
    with proxied(upstream, "maxlength-loosened@30%") as proxy, httpx.Client(base_url=proxy.base_url) as client:
        loosened = [
            len(json.loads(chat(client, response_format=rf).json()["choices"][0]["message"]["content"])) > 3
            for _ in range(10)
        ]
    assert sum(loosened) == 3


def test_every_fault_names_what_the_gate_must_report():
    assert len(FAULTS) >= 10 and all(f.expect and f.area in ("check", "keyword") for f in FAULTS.values())
    with pytest.raises(ValueError, match="unknown fault 'nosuch'; valid: none, stream-no-done"):
        fault_named("nosuch")
    assert fault_named("itl*1.2").event_delay_share == pytest.approx(0.2)
    with pytest.raises(ValueError, match="at least 1"):
        fault_named("itl*0.8")
