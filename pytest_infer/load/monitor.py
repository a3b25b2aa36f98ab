"""The client watching itself (event-loop lag, its thread's CPU and run-queue wait)
and the server's resource use (process-tree RSS; GPU memory through NVML).
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ..server.process import process_tree_rss

LOOP_LAG_INTERVAL_S = 0.005


class LoopLagMonitor:
    """How late the event loop wakes a task that asked to sleep ``interval``.

    A loop busy parsing streams, or a thread starved of CPU, wakes it late; the
    lag is an upper bound on the delay added to every timestamp in that moment.
    """

    def __init__(self, interval: float = LOOP_LAG_INTERVAL_S) -> None:
        self.interval = interval
        self.samples: list[tuple[int, float]] = []  # (wake time ns, lag ms)
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        clock, interval_ns = time.perf_counter_ns, int(self.interval * 1e9)
        while True:
            start = clock()
            await asyncio.sleep(self.interval)
            now = clock()
            self.samples.append((now, max(0, now - start - interval_ns) / 1e6))

    def between(self, start_ns: int, end_ns: int) -> list[float]:
        return [lag for t, lag in self.samples if start_ns <= t <= end_ns]

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass


@dataclass(slots=True)
class ThreadTimes:
    """The calling thread's CPU time and time spent runnable but waiting for a CPU (ns)."""

    cpu_ns: int
    wait_ns: int | None

    @classmethod
    def now(cls) -> ThreadTimes:
        try:  # Linux: exact per-thread figures from the scheduler
            cpu, wait, _ = Path("/proc/thread-self/schedstat").read_text().split()
            return cls(int(cpu), int(wait))
        except (OSError, ValueError):
            return cls(time.thread_time_ns(), None)


@dataclass(slots=True)
class ClientUsage:
    """The client's event-loop thread over the measurement window."""

    window_s: float
    cpu_share: float  # of one core
    wait_share: float | None  # runnable but not running (another process had the core)

    @property
    def busy_share(self) -> float:
        """Running or wanting to run: near 1.0 the client, not the server, set the pace."""
        return self.cpu_share + (self.wait_share or 0.0)

    @classmethod
    def between(cls, start: ThreadTimes, end: ThreadTimes, window_s: float) -> ClientUsage:
        window = max(window_s, 1e-9)
        wait = None if start.wait_ns is None or end.wait_ns is None else (end.wait_ns - start.wait_ns) / 1e9 / window
        return cls(window_s, (end.cpu_ns - start.cpu_ns) / 1e9 / window, wait)


def listening_pid(port: int) -> int | None:
    """The local process listening on ``port`` (for ``--infer-endpoint`` servers on this host)."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return conn.pid
    except (psutil.Error, OSError):
        return None
    return None


def _nvml():
    try:
        import pynvml  # nvidia-ml-py; optional: pip install pytest-infer[gpu]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001  no driver, no GPU: read as CPU-only
        return None
    return pynvml


@dataclass(slots=True)
class ResourcePeak:
    rss_bytes: int | None = None
    gpu_memory_bytes: list[int] = field(default_factory=list)  # peak used per GPU
    samples: int = 0

    def to_dict(self) -> dict:
        return {
            "peak_rss_gb": None if self.rss_bytes is None else round(self.rss_bytes / 2**30, 3),
            "peak_gpu_memory_gb": [round(b / 2**30, 3) for b in self.gpu_memory_bytes] or None,
            "resource_samples": self.samples,
        }


class ResourceSampler:
    """Polls server RSS (process tree) and GPU memory in a thread; keeps the peaks."""

    def __init__(self, pid: int | None, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = ResourcePeak()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pytest-infer-resources", daemon=True)
        self._nvml = _nvml()

    def sample(self) -> None:
        if self.pid is not None:
            rss = process_tree_rss(self.pid)
            self.peak.rss_bytes = max(self.peak.rss_bytes or 0, rss)
        if self._nvml is not None:
            nv = self._nvml
            used = [nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(i)).used for i in range(nv.nvmlDeviceGetCount())]
            old = self.peak.gpu_memory_bytes or [0] * len(used)
            self.peak.gpu_memory_bytes = [max(a, b) for a, b in zip(old, used)]
        self.peak.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ResourceSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
