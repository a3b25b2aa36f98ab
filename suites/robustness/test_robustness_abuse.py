"""Abuse: clients that vanish mid-stream, many at once, or read slowly must not cost later clients.

A server that keeps generating for a client that is gone spends its capacity on
nobody; the symptom a user sees is that the next request is slow. So each test
measures a normal request before the abuse and after it, and fails when the
later one is much slower. Before that, a normal request and a normal stream must
be served correctly (the kit's positive controls), or the test is inconclusive:
an abuse of a server that serves nothing proves nothing.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

import httpx
import pytest

from pytest_infer.client.tls import tls
from pytest_infer.robustness import BadRequest

pytestmark = pytest.mark.robustness

PROBE_TOKENS = 16
SLOWDOWN_FACTOR, SLOWDOWN_SLACK = 3.0, 2.0  # "slowed" = after > max(3 x before, before + 2 s)
DROPPED_STREAMS = 4
CONCURRENT_ABORTS = 32
SLOW_STREAM_TOKENS = 384


def _headers(client: httpx.Client) -> dict[str, str]:
    return {k: v for k, v in client.headers.items() if k.lower() == "authorization"}


def _long_stream_body(model: str, context: int) -> dict:
    """A stream that would run for a long time if nobody stopped it (the tiny model never says EOS at temperature 0)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Tell me a long story."}],
        "max_tokens": max(16, min(context - 64, 4096)),
        "temperature": 0,
        "stream": True,
    }


def _controls(guard, client: httpx.Client, abuse: str, stream_body: dict) -> None:
    """The positive controls of an abuse: a normal request and a normal stream are answered correctly first."""
    guard.require_up()
    guard.control(client, BadRequest(abuse, {**stream_body, "stream": False}))
    guard.control(client, BadRequest(f"{abuse}:stream", stream_body, stream=True))


def _probe_seconds(guard, model: str, when: str, tries: int = 2) -> float:
    """Seconds for one normal small request answered correctly; by default the best of two, so one hiccup of a shared
    machine does not count. Right after abuse one try: the first request is the one that meets a backlog, the second
    would not."""
    best = float("inf")
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": PROBE_TOKENS,
        "temperature": 0,
    }
    for _ in range(tries):
        started = time.monotonic()
        try:
            why = guard.serves(BadRequest("probe", body))
        except httpx.TimeoutException:
            guard.count("hangs")
            pytest.fail(
                f"{guard.target}: {when}, a normal {PROBE_TOKENS}-token request got no answer within"
                f" {guard.timeout:.0f}s",
                pytrace=False,
            )
        except httpx.TransportError as exc:
            pytest.fail(
                f"{guard.target}: {when}, a normal request failed: {type(exc).__name__}: {exc}",
                pytrace=False,
            )
        if why is not None:
            pytest.fail(f"{guard.target}: {when}, a normal request got {why}", pytrace=False)
        best = min(best, time.monotonic() - started)
    return best


def _drop_after(
    base_url: str, headers: dict[str, str], body: dict, seconds: float | None, timeout: float
) -> tuple[str, float]:
    """Open a stream and close the connection: after its first data line (``seconds`` None) or after ``seconds``.

    Returns what happened ("dropped" once a data line came) and the seconds until the first data line (or the drop).
    """
    started = time.monotonic()
    deadline = started + (seconds if seconds is not None else timeout)
    events = 0
    try:
        with httpx.Client(
            base_url=base_url,
            headers=headers,
            timeout=min(timeout, seconds or timeout),
            verify=tls(),
        ) as client:
            with client.stream("POST", "/v1/chat/completions", json=body) as resp:
                if resp.status_code != 200:
                    return f"HTTP {resp.status_code}", time.monotonic() - started
                for line in resp.iter_lines():
                    events += line.startswith("data:")
                    if (seconds is None and events) or time.monotonic() > deadline:
                        break
    except httpx.TimeoutException:
        return (
            "dropped before the answer",
            time.monotonic() - started,
        )  # the abort we wanted, only earlier
    except httpx.TransportError as exc:
        return f"{type(exc).__name__}", time.monotonic() - started
    return ("dropped" if events else "HTTP 200 without a data line"), time.monotonic() - started


def _assert_not_slowed(guard, before: float, after: float, what: str) -> None:
    limit = max(SLOWDOWN_FACTOR * before, before + SLOWDOWN_SLACK)
    assert after <= limit, (
        f"{guard.target}: after {what}, a {PROBE_TOKENS}-token request took {after:.2f}s against {before:.2f}s before "
        f"(limit {limit:.2f}s): the server seems to keep working for clients that are gone"
    )


def _check_health(guard) -> None:
    if (why := guard.health()) is not None:
        pytest.fail(f"{guard.target}: {why}", pytrace=False)


def test_disconnect_mid_stream_frees_the_request(
    infer_client, infer_server, robustness_guard, robustness_context_length, infer_record
):
    body = _long_stream_body(infer_server.model, robustness_context_length)
    _controls(robustness_guard, infer_client, "disconnect_mid_stream", body)
    timeout = robustness_guard.timeout
    before = _probe_seconds(robustness_guard, infer_server.model, "before any abuse")
    drops = [
        _drop_after(infer_server.base_url, _headers(infer_client), body, None, timeout)
        for _ in range(DROPPED_STREAMS)
    ]
    robustness_guard.count("aborted", len(drops))
    assert all(o.startswith("dropped") for o, _ in drops), (
        f"{robustness_guard.target}: streams did not start: {drops}"
    )
    # Each stream starts after the previous one was dropped: waiting long for its first event means
    # the dropped one is still being generated (on a server that serves one request at a time).
    limit = max(SLOWDOWN_FACTOR * before, before + SLOWDOWN_SLACK)
    waits = [round(t, 2) for _, t in drops[1:]]
    assert max(waits, default=0.0) <= limit, (
        f"{robustness_guard.target}: streams opened after a dropped one waited {waits}s for their first event (a normal"
        f" request takes {before:.2f}s; limit {limit:.2f}s): the server seems to keep working for clients that are gone"
    )
    time.sleep(1.0)  # time to notice the disconnects
    _check_health(robustness_guard)
    after = _probe_seconds(robustness_guard, infer_server.model, "after dropped streams")
    _assert_not_slowed(
        robustness_guard,
        before,
        after,
        f"{DROPPED_STREAMS} streams dropped after their first event",
    )
    infer_record(
        "infer_evidence",
        f"{DROPPED_STREAMS} streams dropped after their first event, each next one's first event after {waits}s;"
        f" a {PROBE_TOKENS}-token request answered correctly in {before:.2f}s before, {after:.2f}s after (limit"
        f" {limit:.2f}s)",
    )


def test_many_concurrent_aborts(
    infer_client, infer_server, robustness_guard, robustness_context_length, infer_record
):
    body = _long_stream_body(infer_server.model, robustness_context_length)
    _controls(robustness_guard, infer_client, "many_concurrent_aborts", body)
    timeout = robustness_guard.timeout
    before = _probe_seconds(robustness_guard, infer_server.model, "before any abuse")
    rng = random.Random(7)  # the same abort times every run
    delays = [rng.uniform(0.0, 1.5) for _ in range(CONCURRENT_ABORTS)]
    with ThreadPoolExecutor(max_workers=CONCURRENT_ABORTS) as pool:
        outcomes = [
            o
            for o, _ in pool.map(
                lambda d: _drop_after(
                    infer_server.base_url, _headers(infer_client), body, d, timeout
                ),
                delays,
            )
        ]
    robustness_guard.count("aborted", len(outcomes))
    refused = [o for o in outcomes if not o.startswith("dropped")]
    assert not refused, (
        f"{robustness_guard.target}: {len(refused)} of {len(outcomes)} concurrent streams were not served until their"
        f" client left: {sorted(set(refused))} (an abort test needs streams that run)"
    )
    time.sleep(1.0)
    # the probe before the health check: a health check would wait out the backlog and hide it
    after = _probe_seconds(robustness_guard, infer_server.model, "after concurrent aborts", tries=1)
    _check_health(robustness_guard)
    _assert_not_slowed(
        robustness_guard,
        before,
        after,
        f"{CONCURRENT_ABORTS} concurrent streams aborted at random times",
    )
    infer_record(
        "infer_evidence",
        f"{CONCURRENT_ABORTS} concurrent streams served until their clients left at random times; a"
        f" {PROBE_TOKENS}-token request answered correctly in {before:.2f}s before, {after:.2f}s after",
    )


def _read_fast_seconds(client: httpx.Client, body: dict, timeout: float) -> float:
    """Seconds to read a whole stream at full speed: what a request queued behind it may fairly wait."""
    started = time.monotonic()
    with client.stream("POST", "/v1/chat/completions", json=body, timeout=timeout) as resp:
        for _ in resp.iter_raw():
            pass
    return time.monotonic() - started


def test_slow_reading_client_does_not_block_others(
    infer_client, infer_server, robustness_guard, robustness_context_length, infer_record
):
    """A client reading a stream a few hundred bytes at a time must cost others no more than a fast reader does.

    Servers that serve one request at a time make the next request wait for the
    stream ahead of it; that wait (measured with a fast reader) is allowed. A
    wait beyond it means the slow reader's socket stalls the server.
    """
    stream_body = _long_stream_body(
        infer_server.model, min(robustness_context_length, SLOW_STREAM_TOKENS + 64)
    )
    _controls(robustness_guard, infer_client, "slow_reading_client", stream_body)
    timeout = robustness_guard.timeout
    before = _probe_seconds(robustness_guard, infer_server.model, "before any abuse")
    fast = _read_fast_seconds(infer_client, stream_body, timeout)
    url = urlparse(infer_server.base_url)
    body = httpx.Request(
        "POST", f"{infer_server.base_url}/v1/chat/completions", json=stream_body
    ).content
    head = [
        "POST /v1/chat/completions HTTP/1.1",
        f"Host: {url.netloc}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    head += [f"{k}: {v}" for k, v in _headers(infer_client).items()]
    sock = socket.socket(socket.AF_INET6 if ":" in (url.hostname or "") else socket.AF_INET)
    sock.setsockopt(
        socket.SOL_SOCKET, socket.SO_RCVBUF, 4096
    )  # a small window, so the server's writes can block
    stop = threading.Event()
    received = [0]

    def slow_read() -> None:
        try:
            while not stop.is_set():
                chunk = sock.recv(256)
                if not chunk:
                    return
                received[0] += len(chunk)
                time.sleep(0.25)
        except OSError:
            return

    try:
        sock.settimeout(timeout)
        sock.connect((url.hostname, url.port or 80))
        sock.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + body)
        reader = threading.Thread(target=slow_read, daemon=True)
        reader.start()
        time.sleep(1.0)
        during = _probe_seconds(
            robustness_guard, infer_server.model, "while a slow-reading stream was open"
        )
    finally:
        stop.set()
        sock.close()
        robustness_guard.count("aborted")
    assert received[0] > 0, f"{robustness_guard.target}: the slow client received nothing"
    _check_health(robustness_guard)
    limit = fast + max(SLOWDOWN_FACTOR * before, before + SLOWDOWN_SLACK)
    assert during <= limit, (
        f"{robustness_guard.target}: while a slow reader held a {SLOW_STREAM_TOKENS}-token stream, a"
        f" {PROBE_TOKENS}-token request took {during:.2f}s; a full-speed reader of that stream takes {fast:.2f}s (limit"
        f" {limit:.2f}s): the slow socket stalls the server"
    )
    infer_record(
        "infer_evidence",
        f"while a slow reader held a {SLOW_STREAM_TOKENS}-token stream ({received[0]} bytes read), a"
        f" {PROBE_TOKENS}-token request answered correctly in {during:.2f}s ({before:.2f}s before; a full-speed"
        f" reader of the stream takes {fast:.2f}s; limit {limit:.2f}s)",
    )
