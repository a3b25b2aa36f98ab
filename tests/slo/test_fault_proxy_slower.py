"""The fault proxy's ``slower*F``: a server F times as slow at everything it streams, to show an SLO
limit fails it.

Its other faults are tested in tests/gating/test_fault_proxy.py, whose ``proxies`` runs the proxy's
command line; this one is what the gemma-3-270m limits are shown against
(docs/performance-slos.md): TTFT, every gap and the whole answer F times as long.
"""

from __future__ import annotations

import statistics
import time

import httpx

from tests.gating.test_fault_proxy import proxies


def test_slower_twice_doubles_ttft_and_every_gap(paced_server):
    body = {"model": "paced-model", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 10, "stream": True, "ignore_eos": True}  # fmt: skip

    def timings(client: httpx.Client) -> tuple[float, list[float]]:
        sent = time.perf_counter()
        with client.stream("POST", "/v1/chat/completions", json=body) as resp:
            lines = resp.iter_lines()
            times = [time.perf_counter() for line in lines if '"content": "x"' in line]
        return times[0] - sent, [b - a for a, b in zip(times, times[1:])]

    with proxies(paced_server(ttft_ms=60, itl_ms=20), "none", "slower*2") as (plain, slow):
        runs = {"plain": [timings(plain), timings(plain)], "slow": [timings(slow), timings(slow)]}
    # the fastest of two, as a busy machine only adds: 60 ms -> 120 ms, 20 ms gaps -> 40 ms
    ttft, slow_ttft = (min(first for first, _ in runs[k]) for k in ("plain", "slow"))
    assert 0.055 < ttft < 0.1 and 1.7 < slow_ttft / ttft < 2.3, (ttft, slow_ttft)
    gaps, slow_gaps = runs["plain"][0][1], runs["slow"][0][1]
    gap, slow_gap = statistics.median(gaps), statistics.median(slow_gaps)
    assert 0.017 < gap < 0.03 and 1.7 < slow_gap / gap < 2.3, (gaps, slow_gaps)
