"""The gate-accuracy fault proxy (benchmarks/fault_proxy.py), run as its command line: each fault
changes exactly what it names, and nothing changes when it has none."""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pytest_infer.testing.fakeserver import FakeServer

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fault_proxy.py"
CHAT = "/v1/chat/completions"
BOUNDED = {
    "type": "json_schema",
    "json_schema": {"name": "s", "schema": {"type": "string", "maxLength": 3}},
}


@contextlib.contextmanager
def proxies(upstream: str, *faults: str) -> Iterator[list[httpx.Client]]:
    """One proxy per fault, side by side in one process; a client of each, in order. Each says
    ``NAME: URL -> UPSTREAM`` once it serves."""
    named = [arg for fault in faults for arg in ("--fault", fault)]
    command = [sys.executable, str(SCRIPT), "--upstream", upstream, *named, "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        clients = []
        try:
            for fault in faults:
                name, _, route = (proc.stdout.readline() if proc.stdout else "").partition(": ")
                assert name == fault, (fault, name)
                clients.append(httpx.Client(base_url=route.split(" -> ")[0], timeout=30))
            yield clients
        finally:
            for client in clients:
                client.close()
            proc.terminate()


def chat(client: httpx.Client, **params) -> httpx.Response:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    return client.post(CHAT, json={**body, **params})


def stream(client: httpx.Client, **params) -> list[str]:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    with client.stream("POST", CHAT, json={**body, "stream": True, **params}) as resp:
        return [line[5:].strip() for line in resp.iter_lines() if line.startswith("data:")]


def content(resp: httpx.Response) -> str:
    return resp.json()["choices"][0]["message"]["content"]


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with FakeServer() as server:
        yield server.base_url


def test_no_fault_passes_answers_and_streams_through_unchanged(upstream):
    with proxies(upstream, "none") as (client,), httpx.Client(base_url=upstream) as direct:
        answer = chat(client, temperature=0).json()["choices"]
        assert answer == chat(direct, temperature=0).json()["choices"]
        assert stream(client, temperature=0)[-1] == "[DONE]"
        assert chat(client, temperature=5).status_code == 400


def test_each_named_fault_changes_what_it_names(upstream):
    faults = ("stream-no-done", "stream-no-usage", "ranges-not-validated", "n-ignored",
              "error-envelope-flat", "errors-as-500", "logprobs-dropped", "maxlength-loosened",
              "raw-tab-in-strings")  # fmt: skip
    with proxies(upstream, *faults) as clients:
        no_done, no_usage, ranges, n, flat, as_500, logprobs, max_length, tab = clients
        events = stream(no_done)
        assert events and "[DONE]" not in events
        chunks = [json.loads(e) for e in stream(no_usage, stream_options={"include_usage": True})
                  if e != "[DONE]"]  # fmt: skip
        assert chunks and not any(c.get("usage") and not c.get("choices") for c in chunks)
        assert chat(ranges, temperature=5).status_code == 200
        assert len(chat(n, n=3).json()["choices"]) == 1
        refused = chat(flat, temperature=5)
        assert refused.status_code == 400 and "error" not in refused.json()
        assert refused.json()["detail"]
        assert chat(as_500, temperature=5).status_code == 500
        assert chat(logprobs, logprobs=True).json()["choices"][0]["logprobs"] is None
        assert json.loads(content(chat(max_length, response_format=BOUNDED))) == "aaaaaa"
        assert "\t" in content(chat(tab, response_format=BOUNDED))


def test_timing_faults_delay_the_first_or_every_event(upstream):
    def first_event_seconds(client: httpx.Client) -> float:
        body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 4, "stream": True}  # fmt: skip
        started = time.perf_counter()
        with client.stream("POST", CHAT, json=body) as resp:
            next(resp.iter_lines())
            return time.perf_counter() - started

    with proxies(upstream, "none", "ttft+200ms", "itl+50ms") as (plain, late_first, late_each):
        unchanged = min(first_event_seconds(plain) for _ in range(3))
        assert unchanged < 0.03  # the proxy itself adds no delayed-ACK wait (TCP_NODELAY)
        # at least the added 200 ms (less a timer's slack): the plain path's own time is not
        # added, since its fastest try under load can exceed the delayed path's overhead
        assert min(first_event_seconds(late_first) for _ in range(3)) >= 0.19
        started = time.perf_counter()
        events = stream(late_each)
        assert time.perf_counter() - started >= 0.05 * (len(events) - 1)


@contextlib.contextmanager
def paced_server(*pacing: str) -> Iterator[str]:
    """The paced server (``--ttft-ms``, ``--itl-ms``, ...) on a free port; its URL, from the line
    it prints once it serves."""
    command = [sys.executable, "-m", "pytest_infer.testing.pacedserver", "--port", "0", *pacing]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            ready = proc.stdout.readline() if proc.stdout else ""
            assert "ready" in ready
            yield ready.split(" on ")[1].split()[0]
        finally:
            proc.terminate()


@pytest.fixture(scope="module")
def paced() -> Iterator[str]:
    """A server that paces its tokens 20 ms apart."""
    with paced_server("--ttft-ms", "5", "--itl-ms", "20") as url:
        yield url


def test_an_event_delay_accumulates_like_a_slower_decode_step(paced):
    """+10 ms per event must make tokens paced 20 ms apart come 30 ms apart, and so must x1.5 of
    every gap: a delay that merely shifted every event would hide inside the server's own gaps."""
    body = {"model": "paced-model", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 12, "stream": True, "ignore_eos": True}  # fmt: skip

    def gaps(client: httpx.Client) -> list[float]:
        with client.stream("POST", CHAT, json=body) as resp:
            times = [time.perf_counter() for line in resp.iter_lines()
                     if line.startswith("data:") and '"content"' in line]  # fmt: skip
        return [b - a for a, b in zip(times, times[1:])][1:]  # the first holds the first token's

    with proxies(paced, "none", "itl+10ms", "itl*1.5") as clients:
        plain, slowed, proportional = (gaps(client) for client in clients)
    assert len(plain) >= 5 and len(slowed) >= 5 and len(proportional) >= 5
    # a shift of every event would leave the gaps as they were; on a busy machine each gap is noisy
    assert 0.017 < statistics.median(plain) < 0.025, plain
    assert 0.005 < statistics.median(slowed) - statistics.median(plain) < 0.015, (plain, slowed)
    # x1.5 of a 20 ms gap: 10 ms more each, as +10 ms is
    more = statistics.median(proportional) - statistics.median(plain)
    assert 0.005 < more < 0.015, (plain, proportional)


def test_a_keyword_loosened_on_a_share_of_requests(upstream):
    with proxies(upstream, "maxlength-loosened@30%") as (client,):
        loosened = [len(json.loads(content(chat(client, response_format=BOUNDED)))) > 3
                    for _ in range(10)]  # fmt: skip
    assert sum(loosened) == 3


def test_every_named_fault_says_what_the_gate_must_report():
    listed = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True,
                            check=True, timeout=60).stdout.splitlines()  # fmt: skip
    faults = [json.loads(line) for line in listed]
    assert len(faults) >= 10 and faults[0]["name"] == "stream-no-done"
    assert all(f["expect"] and f["area"] in ("check", "keyword") for f in faults)


@pytest.mark.parametrize(
    "fault, says",
    [
        ("nosuch", "unknown fault 'nosuch'; valid: none, stream-no-done"),
        ("itl*0.8", "itl*0.8: a proxy can only delay, the factor must be at least 1"),
        ("slower*0.5", "slower*0.5: a proxy can only delay, the factor must be at least 1"),
    ],
)
def test_a_fault_it_cannot_inject_is_refused_by_name(fault, says):
    run = subprocess.run([sys.executable, str(SCRIPT), "--upstream", "http://127.0.0.1:9",
                          "--fault", fault, "--port", "0"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 2 and says in run.stderr
