"""The fault proxy's ``slower*F``: a server F times as slow at everything it streams, to show an SLO limit fails it.

Its other faults are tested in tests/gating/test_fault_proxy.py; this one is what the gemma-3-270m limits are shown
against (docs/performance-slos.md): TTFT, every gap and the whole answer F times as long.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pytest_infer.server.process import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from fault_proxy import FaultProxy, fault_named  # noqa: E402


def test_slower_twice_doubles_ttft_and_every_gap():
    port = free_port("127.0.0.1")
    paced = subprocess.Popen([sys.executable, "-m", "pytest_infer.testing.pacedserver", "--port", str(port),
                              "--ttft-ms", "60", "--itl-ms", "20"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    body = {"model": "paced-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10,
            "stream": True, "ignore_eos": True}  # fmt: skip
    try:
        assert "ready" in (paced.stdout.readline() if paced.stdout else "")

        def timings(fault: str) -> tuple[float, list[float]]:
            with (
                FaultProxy(f"http://127.0.0.1:{port}", fault_named(fault)) as proxy,
                httpx.Client(base_url=proxy.base_url) as client,
            ):
                sent = time.perf_counter()
                with client.stream("POST", "/v1/chat/completions", json=body) as resp:
                    times = [time.perf_counter() for line in resp.iter_lines() if '"content": "x"' in line]
            return times[0] - sent, [b - a for a, b in zip(times, times[1:])]

        plain, slow = timings("none"), timings("slower*2")
        # the fastest of two, as a busy machine only adds: 60 ms -> 120 ms, 20 ms gaps -> 40 ms
        ttft, slow_ttft = min(timings("none")[0], plain[0]), min(timings("slower*2")[0], slow[0])
        assert 0.055 < ttft < 0.1 and 1.7 < slow_ttft / ttft < 2.3, (ttft, slow_ttft)
        gap, slow_gap = statistics.median(plain[1]), statistics.median(slow[1])
        assert 0.017 < gap < 0.03 and 1.7 < slow_gap / gap < 2.3, (plain[1], slow[1])
    finally:
        paced.terminate()
        paced.wait(10)


def test_slower_names_its_factor_and_refuses_a_speed_up():
    assert fault_named("slower*2").time_scale == 2 and fault_named("slower*2").name == "slower*2"
    with pytest.raises(ValueError, match="at least 1"):
        fault_named("slower*0.5")
