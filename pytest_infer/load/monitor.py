"""The client watching itself (event-loop lag, its thread's CPU and run-queue wait)
and the server's resource use (process-tree RSS; GPU memory through NVML).
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        wait = (
            None
            if start.wait_ns is None or end.wait_ns is None
            else (end.wait_ns - start.wait_ns) / 1e9 / window
        )
        return cls(window_s, (end.cpu_ns - start.cpu_ns) / 1e9 / window, wait)


def listening_pid(port: int) -> int | None:
    """The local process listening on ``port`` (for ``--infer-endpoint`` servers on this host)."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if (
                conn.status == psutil.CONN_LISTEN
                and conn.laddr
                and conn.laddr.port == port
                and conn.pid
            ):
                return conn.pid
    except (psutil.Error, OSError):
        return None
    return None


NVML_MISSING = "NVML not available: pynvml not installed (pip install 'pytest-infer[gpu]')"
ENERGY_COUNTER = "NVML's total energy counter (nvmlDeviceGetTotalEnergyConsumption)"


def nvml_status() -> tuple[Any, str]:
    """The initialised ``pynvml`` module, or None and why not (named in every figure NVML could not
    measure).
    """
    try:
        import pynvml  # nvidia-ml-py; optional: pip install pytest-infer[gpu]
    except ImportError:
        return None, NVML_MISSING
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001  no driver, no GPU: read as CPU-only
        return None, f"NVML not available: nvmlInit failed, no NVIDIA driver or GPU ({exc})"
    return pynvml, ""


@dataclass(slots=True)
class ResourcePeak:
    rss_bytes: int | None = None
    gpu_memory_bytes: list[int] = field(default_factory=list)  # peak used per GPU
    samples: int = 0
    # per GPU over the measured window (NVML's counter is in millijoules)
    energy_mj: list[float] | None = None
    # figure -> why NVML could not measure it
    not_measured: dict[str, str] = field(default_factory=dict)

    @property
    def energy_j(self) -> float | None:
        return None if self.energy_mj is None else sum(self.energy_mj) / 1000

    def to_dict(self) -> dict:
        return {
            "peak_rss_gb": None if self.rss_bytes is None else round(self.rss_bytes / 2**30, 3),
            "peak_gpu_memory_gb": [round(b / 2**30, 3) for b in self.gpu_memory_bytes] or None,
            "energy_j": None if self.energy_j is None else round(self.energy_j, 3),
            "resource_samples": self.samples,
        }


def _between(series: list[tuple[int, list[int]]], start_ns: int, end_ns: int) -> list[float] | None:
    """Per-GPU counter increase from ``start_ns`` to ``end_ns``, each end read off the line between
    the samples around it."""

    def at(t: int) -> list[float] | None:
        before = [s for s in series if s[0] <= t]
        after = [s for s in series if s[0] >= t]
        if not before or not after:
            return None
        (t0, v0), (t1, v1) = before[-1], after[0]
        share = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        return [a + (b - a) * share for a, b in zip(v0, v1)]

    first, last = at(start_ns), at(end_ns)
    return None if first is None or last is None else [b - a for a, b in zip(first, last)]


class ResourceSampler:
    """Polls server RSS (process tree), GPU memory and the GPUs' energy counters in a thread; keeps
    the peaks.

    The energy counters are sampled with a timestamp, so that :meth:`close_window` can read the
    energy of the measured window alone (warm-up and cool-down excluded), whatever the sampling
    interval.
    """

    def __init__(self, pid: int | None, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = ResourcePeak()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="pytest-infer-resources", daemon=True
        )
        self._nvml, why = nvml_status()
        self._energy: list[tuple[int, list[int]]] = []  # (perf_counter_ns, mJ per GPU)
        if self._nvml is None:
            self.peak.not_measured = {"gpu_memory": why, "energy": why}

    def sample(self) -> None:
        if self.pid is not None:
            rss = process_tree_rss(self.pid)
            self.peak.rss_bytes = max(self.peak.rss_bytes or 0, rss)
        if self._nvml is not None:
            nv = self._nvml
            handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
            used = [nv.nvmlDeviceGetMemoryInfo(h).used for h in handles]
            old = self.peak.gpu_memory_bytes or [0] * len(used)
            self.peak.gpu_memory_bytes = [max(a, b) for a, b in zip(old, used)]
            if "energy" not in self.peak.not_measured:
                try:
                    self._energy.append(
                        (
                            time.perf_counter_ns(),
                            [nv.nvmlDeviceGetTotalEnergyConsumption(h) for h in handles],
                        )
                    )
                except Exception as exc:  # noqa: BLE001  pre-Volta GPUs and some virtual ones lack the counter
                    self.peak.not_measured["energy"] = (
                        f"{ENERGY_COUNTER} not supported here ({exc})"
                    )
        self.peak.samples += 1

    def close_window(self, start_ns: int, end_ns: int) -> None:
        """The GPUs' energy over the measured window (``perf_counter_ns`` times), once the sampler
        has stopped.
        """
        if self._nvml is None or "energy" in self.peak.not_measured:
            return
        energy = _between(self._energy, start_ns, end_ns) if end_ns > start_ns else None
        if energy is None:
            self.peak.not_measured["energy"] = (
                f"{ENERGY_COUNTER}: no samples around the measured window"
            )
        else:
            self.peak.energy_mj = energy

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
