"""Fixtures of the SLO tests: the paced server as a process (the client's ground truth)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import httpx
import pytest

from pytest_infer.server.process import free_port
from pytest_infer.slo.metrics import ValidityRules


@pytest.fixture
def lenient_validity() -> ValidityRules:
    """Validity rules a busy test machine never trips: for tests of what the figures judge, where a client starved by
    the other test worker is this box's noise, not the subject (validity itself is tested in test_metrics.py)."""
    return ValidityRules(
        max_client_busy=100.0, max_loop_lag_p99_ms=1e9, max_schedule_lag_p99_ms=1e9
    )


@pytest.fixture
def paced_server() -> Iterator[Callable[..., str]]:
    """``paced_server(ttft_ms=, itl_ms=)`` -> base URL of a pacedserver process (stopped after the test)."""
    procs: list[subprocess.Popen] = []

    def start(ttft_ms: float = 50, itl_ms: float = 10, *extra: str) -> str:
        port = free_port("127.0.0.1")
        argv = [
            sys.executable,
            "-m",
            "pytest_infer.testing.pacedserver",
            "--port",
            str(port),
            "--ttft-ms",
            str(ttft_ms),
            "--itl-ms",
            str(itl_ms),
            *extra,
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        line = proc.stdout.readline() if proc.stdout else ""
        assert "ready" in line, f"pacedserver did not start: {line!r}"
        return f"http://127.0.0.1:{port}"

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()  # else the pipe is closed by the garbage collector, with a ResourceWarning


def server_stats(base_url: str) -> list[dict]:
    return httpx.get(f"{base_url}/stats", timeout=10).json()["requests"]
