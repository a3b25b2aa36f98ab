"""Load patterns: closed-loop concurrency, open-loop (Poisson or gamma-bursty) arrivals, and trace
replay.

Both run warm-up, measured and cool-down requests in one stream of work, so the
measured requests see the full offered load from the first to the last:
- tickets ``0..W-1`` are warm-up; the next ones are measured (a count, or all
  sent within a duration after the first measured one);
- after that, cool-down requests keep the load steady until the last measured
  request ends; then no more are sent, those in flight are drained (or cancelled),
  and they are excluded like the warm-up.

A replayed trace (``replay.py``) is an open loop at the trace's own arrival times; it ends
when the trace does. What each request asks for (single prompts, conversations, a trace's
lines) is ``workloads.py``'s.

The measurement window runs from the first measured send to the last measured
end. The client's own load (event-loop lag, CPU and run-queue wait of its
thread, open-loop schedule lag) and the server's resource peaks are recorded
over the same window. Where the framework's metric names are known, the server's own
``/metrics`` are scraped before the first request, at the window's end and after the
drain (``server_metrics.py``), so no scrape falls inside the measured window.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from ..adapters.base import ServerMetricNames
from ..client.endpoint import Endpoint
from .client import async_client, stream_request
from .monitor import (
    ClientUsage,
    LoopLagMonitor,
    ResourcePeak,
    ResourceSampler,
    ThreadTimes,
)
from .prompts import FALLBACK, Calibration, calibrate
from .rawhttp import RawClient
from .replay import gaps_ns, read_trace
from .server_metrics import ServerFigures, ServerWatch
from .trace import RequestTrace
from .workloads import Workload, bodies

MODES = ("closed", "poisson", "replay")
TRANSPORTS = ("auto", "raw", "httpx")


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """How much load, for how long. ``requests`` or ``duration_s`` bounds the measured part."""

    mode: str = "closed"
    concurrency: int = 1
    rate: float | None = None  # requests/s, open loop
    burstiness: float = 1.0  # gamma shape of inter-arrival gaps; 1.0 is Poisson
    requests: int | None = 100
    duration_s: float | None = None
    warmup_requests: int = 8
    max_in_flight: int = 256  # open loop: connection limit
    seed: int = 0
    # after the last measured request: "drain" lets cool-down requests finish (a server that
    # does not abort on disconnect would otherwise keep generating into the next load point);
    # "cancel" closes them at once
    cooldown: str = "drain"
    drain_timeout_s: float = 300.0
    speedup: float = 1.0  # replay: the trace's arrival offsets divided by this

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"load mode {self.mode!r}: use one of {', '.join(MODES)}")
        if self.mode == "poisson" and not (self.rate and self.rate > 0):
            raise ValueError("an open-loop (poisson) load needs a rate > 0 requests/s")
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not self.requests and not self.duration_s:
            raise ValueError("bound the measured part with requests or duration_s")
        if self.cooldown not in ("drain", "cancel"):
            raise ValueError(f"cooldown {self.cooldown!r}: use drain or cancel")
        if not self.speedup > 0:
            raise ValueError("a replay's speedup must be > 0")

    @property
    def label(self) -> str:
        if self.mode == "replay":
            return "replay" if self.speedup == 1 else f"replay x{self.speedup:g}"
        return f"c{self.concurrency}" if self.mode == "closed" else f"poisson{self.rate:g}/s"


@dataclass(slots=True)
class LoadRun:
    spec: LoadSpec
    workload: Workload
    traces: list[RequestTrace]
    window_start_ns: int
    window_end_ns: int
    loop_lag_ms: list[float]
    client: ClientUsage
    resources: ResourcePeak
    calibration: Calibration
    server: ServerFigures | None = None  # the server's /metrics over the whole run, where scraped

    @property
    def measured(self) -> list[RequestTrace]:
        return [t for t in self.traces if t.phase == "measured"]

    @property
    def window_s(self) -> float:
        return (self.window_end_ns - self.window_start_ns) / 1e9

    def describe(self) -> dict[str, Any]:
        return {
            "load": asdict(self.spec),
            "workload": asdict(self.workload),
            "calibration": asdict(self.calibration),
        }


class _Runner:
    def __init__(
        self,
        client: httpx.AsyncClient | RawClient,
        spec: LoadSpec,
        workload: Workload,
        body_for: Callable[[int], dict[str, Any]],
    ) -> None:
        self.client, self.spec, self.workload, self.body_for = client, spec, workload, body_for
        self.traces: list[RequestTrace] = []
        self.window_start_ns: int | None = None
        self.window_end_ns = 0
        self.issuing_measured = True
        self.measured_in_flight = 0
        self.done = asyncio.Event()
        self.lag = LoopLagMonitor()
        self.times_start: ThreadTimes | None = None
        self.times_end: ThreadTimes | None = None
        # blocking; run in a thread once the window has closed
        self.at_window_end: Callable[[], Any] | None = None
        # told each request's index once it has ended (a conversation's next turn waits for it)
        self.on_end: Callable[[int], None] | None = None

    def phase(self, i: int) -> str:
        spec = self.spec
        if i < spec.warmup_requests:
            return "warmup"
        if not self.issuing_measured:
            return "cooldown"
        now = time.perf_counter_ns()
        if self.window_start_ns is None:
            self.window_start_ns = now
            self.times_start = ThreadTimes.now()
        if spec.duration_s and now - self.window_start_ns > spec.duration_s * 1e9:
            self.issuing_measured = False
            if self.measured_in_flight == 0:
                self._finish()
            return "cooldown"
        if spec.requests and i >= spec.warmup_requests + spec.requests - 1:
            self.issuing_measured = False  # this is the last measured request
        return "measured"

    def _finish(self) -> None:
        self.times_end = ThreadTimes.now()
        self.done.set()

    async def send(self, trace: RequestTrace) -> None:
        self.traces.append(trace)
        measured = trace.phase == "measured"
        if measured:
            self.measured_in_flight += 1
        body = self.body_for(trace.index)
        if isinstance(self.client, RawClient):
            await self.client.stream(self.workload.path, body, trace)
        else:
            await stream_request(self.client, self.workload.path, body, trace)
        if self.on_end is not None:
            self.on_end(trace.index)
        if measured:
            self.measured_in_flight -= 1
            self.window_end_ns = max(self.window_end_ns, trace.end_ns or time.perf_counter_ns())
            if (
                not self.issuing_measured
                and self.measured_in_flight == 0
                and not self.done.is_set()
            ):
                self._finish()

    async def closed(self) -> None:
        counter = iter(range(10**9))

        async def worker() -> None:
            while not self.done.is_set():
                i = next(counter)
                await self.send(RequestTrace(i, self.phase(i)))

        await self._until_done(
            [asyncio.create_task(worker()) for _ in range(self.spec.concurrency)]
        )

    async def poisson(self) -> None:
        spec = self.spec
        assert spec.rate is not None  # LoadSpec refuses an open-loop load without one
        rng = random.Random(spec.seed)
        scale_ns = 1e9 / (spec.rate * spec.burstiness)  # mean gap = shape * scale = 1/rate
        await self.open_loop(
            int(rng.gammavariate(spec.burstiness, scale_ns)) for _ in itertools.count()
        )

    async def open_loop(self, gaps: Iterable[int]) -> None:
        """Request i is due ``gaps[i]`` ns after request i-1 (the first after the start), whatever
        is in flight.

        A finite schedule (a replayed trace) that runs out ends the measured part: the run then
        waits for the measured requests in flight.
        """
        tasks: list[asyncio.Task] = []

        async def dispatch() -> None:
            intended = time.perf_counter_ns()
            for i, gap in enumerate(gaps):
                if self.done.is_set():
                    return
                intended += gap
                delay = (intended - time.perf_counter_ns()) / 1e9
                if delay > 0:
                    await asyncio.sleep(delay)
                if self.done.is_set():
                    return
                tasks.append(
                    asyncio.create_task(
                        self.send(RequestTrace(i, self.phase(i), intended_ns=intended))
                    )
                )
            self.issuing_measured = False
            if self.measured_in_flight == 0 and not self.done.is_set():
                self._finish()
            await self.done.wait()

        await self._until_done([asyncio.create_task(dispatch())], tasks)

    async def _until_done(
        self, workers: list[asyncio.Task], spawned: list[asyncio.Task] | None = None
    ) -> None:
        self.lag.start()
        try:
            done_wait = asyncio.create_task(self.done.wait())
            await asyncio.wait([done_wait, *workers], return_when=asyncio.FIRST_COMPLETED)
            for task in workers:
                if task.done() and task.exception():
                    raise task.exception()  # type: ignore[misc]
            if self.at_window_end is not None and self.done.is_set():
                await asyncio.to_thread(self.at_window_end)
            # let cool-down requests end, so none runs on into the next load point
            if self.spec.cooldown == "drain":
                pending = [t for t in [*workers, *(spawned or [])] if not t.done()]
                if pending:
                    await asyncio.wait(pending, timeout=self.spec.drain_timeout_s)
        finally:
            for task in [*workers, *(spawned or [])]:
                task.cancel()
            await asyncio.gather(*workers, *(spawned or []), return_exceptions=True)
            await self.lag.stop()


async def run_load_async(
    endpoint: Endpoint,
    spec: LoadSpec,
    workload: Workload,
    *,
    server_pid: int | None = None,
    calibration: Calibration | None = None,
    seed: int = 0,
    transport: str = "auto",
    server_metrics: ServerMetricNames | None = None,
    # a _Runner subclass: distributed.py runs one process's share
    runner_class: Callable[..., _Runner] | None = None,
    salt: str | None = None,
) -> LoadRun:
    """Run one load point against a server and return every trace and the client's own figures.

    Every request is bounded by ``endpoint.timeout``.

    ``transport``: ``raw`` (the asyncio-protocol client, plain http only), ``httpx``, or
    ``auto`` (raw for http://, httpx for https://).

    ``server_metrics``: the framework's Prometheus names; the run then carries the server's figures.

    ``salt``: mixed into the prompts' seed, fresh for each run unless given (the processes of one
    distributed run share theirs). A server's prefix cache keeps an earlier run's prompts (an
    earlier load point, an earlier session), which would turn repeated text into hits the workload
    did not ask for.
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"transport {transport!r}: use one of {', '.join(TRANSPORTS)}")
    if (spec.mode == "replay") != bool(workload.trace_file):
        raise ValueError(
            "a replay load needs a workload with a trace_file, and a trace_file needs a replay load"
        )
    model = endpoint.model
    if calibration is None:
        with endpoint.http() as sync:
            calibration = await asyncio.to_thread(calibrate, sync, workload.api, model)
    source = bodies(
        workload, model, calibration, f"{seed}.{secrets.token_hex(4) if salt is None else salt}"
    )
    connections = spec.concurrency if spec.mode == "closed" else spec.max_in_flight
    raw = transport == "raw" or (transport == "auto" and endpoint.base_url.startswith("http://"))
    client = RawClient(endpoint) if raw else async_client(endpoint, concurrency=connections)
    watch = ServerWatch(endpoint, server_metrics) if server_metrics is not None else None
    if watch is not None:
        await asyncio.to_thread(watch.start)
    async with client:
        runner = (runner_class or _Runner)(client, spec, workload, source.body)
        runner.at_window_end = watch.at_window_end if watch is not None else None
        runner.on_end = source.ended
        with ResourceSampler(server_pid) as sampler:
            if spec.mode == "replay":
                assert workload.trace_file is not None
                await runner.open_loop(gaps_ns(read_trace(workload.trace_file), spec.speedup))
            else:
                await (runner.closed() if spec.mode == "closed" else runner.poisson())
    if watch is not None:
        await asyncio.to_thread(
            watch.finish, sum(t.status == 200 and not t.cancelled for t in runner.traces)
        )
    start = runner.window_start_ns or 0
    end = runner.window_end_ns or start
    sampler.close_window(start, end)
    usage = ClientUsage.between(
        runner.times_start or ThreadTimes.now(),
        runner.times_end or ThreadTimes.now(),
        (end - start) / 1e9,
    )
    return LoadRun(
        spec=spec,
        workload=workload,
        traces=sorted(runner.traces, key=lambda t: t.index),
        window_start_ns=start,
        window_end_ns=end,
        loop_lag_ms=runner.lag.between(start, end),
        client=usage,
        resources=sampler.peak,
        calibration=calibration or FALLBACK,
        server=watch.figures() if watch is not None else None,
    )


def run_load(endpoint: Endpoint, spec: LoadSpec, workload: Workload, **kwargs: Any) -> LoadRun:
    """Blocking form of :func:`run_load_async` (its own event loop)."""
    return asyncio.run(run_load_async(endpoint, spec, workload, **kwargs))
