"""One load from several client processes: one per core on this host, or Ray actors across a
cluster's hosts.

A single Python client saturates one core (about 25k stream events/s here); beyond that its own
delay enters every timestamp. This runs the same client (``run_load_async``, one ``_Runner`` each)
in N processes, each with its share of one load, and merges what they recorded:

- closed loop: the streams, the warm-up and the measured requests are divided among the processes
  (requests in proportion to streams); ticket ``i`` of process ``r`` of ``P`` sends what the single
  client's request ``i * P + r`` sends, so no two processes send the same prompt, and the shared
  prefix is the one prefix of the seed;
- open loop (and a replayed trace): every process walks the whole arrival schedule (the single
  client's seeded one, gap for gap, or the trace's) from one common start time and sends every P-th
  arrival, ``i % P == rank``, as request ``i``; warm-up, measured and
  cool-down are decided by the arrival's index in the whole schedule, so the union is the single
  client's schedule exactly;
- cool-down: a process whose measured requests have all ended keeps sending cool-down requests until
  every process's have, so each measured request sees the full load. The only signals are
  multiprocessing Events (same host) or one small Ray actor (cluster): "my measured requests ended"
  and "everyone's have"; the driver raises the second, scrapes the server's metrics at the window's
  end and waits for the drain.

Every process returns its raw traces (never histograms), so percentiles of the merged run are exact.
Clocks: ``perf_counter_ns`` is CLOCK_MONOTONIC on Linux, one clock for every process of a host, so
same-host traces merge as they are (``tests/slo/test_distributed.py`` checks it). A Ray actor on
another node has another clock: its offset to the driver's is measured by round trips (the actor's
clock minus the midpoint of the fastest round trip, uncertain by half that round trip) and
subtracted from its timestamps, and its start time is the driver's plus that offset.

Validity: every process keeps its own monitors (event-loop lag, its thread's CPU and run-queue
wait). The merged run carries the worst process's (the loop-lag samples of the one with the
highest p99, the usage of the busiest), so the validity rules judge it as they judge one client;
``DistributedRun.processes`` keeps every process's figures and clock offset.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import multiprocessing
import os
import queue
import random
import socket
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..adapters.base import ServerMetricNames
from ..client.endpoint import Endpoint
from .monitor import ClientUsage, ResourceSampler, ThreadTimes
from .patterns import LoadRun, LoadSpec, Workload, _Runner, run_load_async
from .prompts import Calibration, calibrate
from .server_metrics import ServerWatch
from .trace import RequestTrace

START_LEAD_S = 0.1  # from the go signal to the common start (same host)
RAY_START_LEAD_S = 0.5  # actor calls take longer to arrive
STARTUP_TIMEOUT_S = 120.0  # a process or actor that is not ready by then fails the run
CLOCK_ROUNDS = 25
# a process's check for "everyone's measured requests have ended": it only ends the cool-down
POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class Share:
    """One process's part of a load: its rank among ``processes``, the whole load's spec, the common
    start (its own clock)."""

    rank: int
    processes: int
    spec: LoadSpec
    start_ns: int = 0


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """A process's clock minus the driver's, measured at the fastest of several round trips."""

    offset_ns: int = 0
    uncertainty_ns: int = 0  # half the fastest round trip
    # subtracted from its timestamps (another host); same-host clocks are one clock
    applied: bool = False

    @property
    def shift_ns(self) -> int:
        return self.offset_ns if self.applied else 0


def clock_offset(
    remote_clock: Callable[[], int],
    rounds: int = CLOCK_ROUNDS,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> ClockOffset:
    """``remote_clock()`` returns the other process's clock; its offset = remote - (send + receive)
    / 2 at the fastest round trip."""
    best: tuple[int, int] | None = None
    for _ in range(rounds):
        sent = clock()
        remote = remote_clock()
        received = clock()
        rtt = received - sent
        if best is None or rtt < best[0]:
            best = (rtt, remote - (sent + received) // 2)
    assert best is not None, "at least one round"
    return ClockOffset(best[1], best[0] // 2)


def split(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` in whole parts proportional to ``weights`` (largest remainder first), summing to
    ``total``.
    """
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    parts = [math.floor(e) for e in exact]
    for k in sorted(range(len(parts)), key=lambda k: (parts[k] - exact[k], k))[
        : total - sum(parts)
    ]:
        parts[k] += 1
    return parts


def process_specs(spec: LoadSpec, processes: int) -> list[LoadSpec]:
    """Each process's own spec. Closed loop: streams, warm-up and measured requests divided (never
    more processes than streams or measured requests); open loop: the schedule stays whole
    (``Share``), only the connection limit is divided."""
    if processes < 1:
        raise ValueError("processes must be at least 1")
    if spec.mode != "closed":
        return [
            replace(spec, max_in_flight=max(1, math.ceil(spec.max_in_flight / processes)))
        ] * processes
    n = min(processes, spec.concurrency, spec.requests or processes)
    streams = split(spec.concurrency, [1] * n)
    warmup = split(spec.warmup_requests, streams)
    requests: list[int | None] = [None] * n
    if spec.requests:
        parts = split(spec.requests, streams)
        requests = list(parts if min(parts) > 0 else split(spec.requests, [1] * n))
    return [
        replace(spec, concurrency=c, warmup_requests=w, requests=r)
        for c, w, r in zip(streams, warmup, requests)
    ]


class _Signals(Protocol):
    def measured_done(self) -> None: ...

    async def all_done(self) -> None: ...


class _ProcessSignals:
    """Same host: this process's Event (set when its measured requests have ended) and everyone's
    (set by the driver)."""

    def __init__(self, mine: Any, everyone: Any) -> None:
        self.mine, self.everyone = mine, everyone

    def measured_done(self) -> None:
        self.mine.set()

    async def all_done(self) -> None:
        while not self.everyone.is_set():
            await asyncio.sleep(POLL_S)


class _RaySignals:
    """A cluster: the same two signals through one Ray actor (``RayFlags``)."""

    def __init__(self, flags: Any, rank: int) -> None:
        self.flags, self.rank = flags, rank

    def measured_done(self) -> None:
        self.flags.measured_done.remote(self.rank)

    async def all_done(self) -> None:
        await self.flags.wait_all.remote()


class _ShareRunner(_Runner):
    """The single client's runner, running one share: a common start, request indices of the whole
    load (so request ``i`` asks what the single client's request ``i`` asks), the open loop's whole
    schedule, and cool-down until every process's measured requests have ended."""

    def __init__(
        self,
        client: Any,
        spec: LoadSpec,
        workload: Workload,
        body_for: Callable[[int], dict[str, Any]],
        *,
        share: Share,
        signals: _Signals,
    ) -> None:
        super().__init__(client, spec, workload, body_for)
        self.share, self.signals = share, signals
        self.measured_ended = False

    def _finish(
        self,
        # this process's measured requests have all ended; the load goes on until everyone's have
    ) -> None:
        if self.measured_ended:
            return
        self.measured_ended = True
        self.times_end = ThreadTimes.now()
        self.signals.measured_done()

    async def _everyone(self) -> None:
        await self.signals.all_done()
        if self.times_end is None:  # released by the driver before this share ended
            self.times_end = ThreadTimes.now()
        self.done.set()

    async def _together(self, run: Callable[[], Any]) -> None:
        everyone = asyncio.create_task(self._everyone())
        try:
            delay = (self.share.start_ns - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            await run()
        finally:
            everyone.cancel()
            await asyncio.gather(everyone, return_exceptions=True)

    async def closed(self) -> None:
        """This share's streams; its ticket ``i`` (its own warm-up, measured and cool-down count) is
        request ``i * P + rank``."""
        tickets, processes, rank = itertools.count(), self.share.processes, self.share.rank

        async def stream() -> None:
            while not self.done.is_set():
                i = next(tickets)
                await self.send(RequestTrace(i * processes + rank, self.phase(i)))

        await self._together(
            lambda: self._until_done(
                [asyncio.create_task(stream()) for _ in range(self.spec.concurrency)]
            )
        )

    async def poisson(self) -> None:
        spec = self.share.spec
        assert spec.rate is not None
        rng = random.Random(spec.seed)  # the single client's schedule, gap for gap
        scale_ns = 1e9 / (spec.rate * spec.burstiness)
        await self.open_loop(
            int(rng.gammavariate(spec.burstiness, scale_ns)) for _ in itertools.count()
        )

    async def open_loop(self, gaps: Iterable[int]) -> None:
        """The whole schedule from the common start; this process sends arrivals ``i % P ==
        rank``.
        """
        await self._together(lambda: self._share_of_schedule(gaps))

    def open_phase(self, i: int, intended: int, first_measured: int | None) -> str:
        """Arrival ``i`` of the whole schedule: warm-up, measured or cool-down, as the single client
        decides it.
        """
        spec, processes = self.share.spec, self.share.processes
        if i < spec.warmup_requests:
            return "warmup"
        if not self.issuing_measured:
            return "cooldown"
        first = first_measured if first_measured is not None else intended
        measured = (
            i < spec.warmup_requests + spec.requests
            if spec.requests
            else (intended - first) <= (spec.duration_s or 0) * 1e9
        )
        if not measured:
            self.issuing_measured = False
            if self.measured_in_flight == 0:
                self._finish()
            return "cooldown"
        if self.window_start_ns is None:
            self.window_start_ns = time.perf_counter_ns()
            self.times_start = ThreadTimes.now()
        if spec.requests and i + processes >= spec.warmup_requests + spec.requests:
            self.issuing_measured = False  # this process's last measured arrival
        return "measured"

    async def _share_of_schedule(self, gaps: Iterable[int]) -> None:
        rank, processes, warmup = (
            self.share.rank,
            self.share.processes,
            self.share.spec.warmup_requests,
        )
        tasks: list[asyncio.Task] = []

        async def dispatch() -> None:
            intended, first_measured = self.share.start_ns, None
            for i, gap in enumerate(gaps):
                if self.done.is_set():
                    return
                intended += gap
                if i == warmup:
                    first_measured = intended
                if i % processes != rank:
                    continue
                delay = (intended - time.perf_counter_ns()) / 1e9
                if delay > 0:
                    await asyncio.sleep(delay)
                if self.done.is_set():
                    return
                tasks.append(
                    asyncio.create_task(
                        self.send(
                            RequestTrace(
                                i,
                                self.open_phase(i, intended, first_measured),
                                intended_ns=intended,
                            )
                        )
                    )
                )
            self.issuing_measured = False  # a finite schedule (a replayed trace) ran out
            if self.measured_in_flight == 0:
                self._finish()
            await self.done.wait()

        await self._until_done([asyncio.create_task(dispatch())], tasks)


@dataclass(slots=True)
class _Part:
    """What one process sends back: where it ran and its whole run, on its own clock."""

    rank: int
    host: str
    pid: int
    run: LoadRun
    node: str = ""


@dataclass(slots=True)
class ProcessFigures:
    """One client process of a distributed run: where it ran, its share, its own validity monitors,
    its clock.
    """

    rank: int
    host: str
    pid: int
    share: str
    requests: int  # measured
    # its measured window, on the driver's clock (None: it had no measured request)
    window_start_ns: int | None
    window_end_ns: int | None
    loop_lag_ms: list[float]
    client: ClientUsage
    clock: ClockOffset
    node: str = ""

    @property
    def loop_lag_p99_ms(self) -> float | None:
        lag = sorted(self.loop_lag_ms)
        return lag[min(len(lag) - 1, math.ceil(0.99 * len(lag)) - 1)] if lag else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "host": self.host,
            "node": self.node,
            "pid": self.pid,
            "share": self.share,
            "requests": self.requests,
            "busy_share": round(self.client.busy_share, 3),
            "cpu_share": round(self.client.cpu_share, 3),
            "wait_share": None
            if self.client.wait_share is None
            else round(self.client.wait_share, 3),
            "loop_lag_p99_ms": None
            if self.loop_lag_p99_ms is None
            else round(self.loop_lag_p99_ms, 2),
            "loop_lag_samples": len(self.loop_lag_ms),
            "clock_offset_ms": round(self.clock.offset_ns / 1e6, 3),
            "clock_uncertainty_ms": round(self.clock.uncertainty_ns / 1e6, 3),
            "clock_offset_applied": self.clock.applied,
        }


@dataclass(slots=True)
class DistributedRun(LoadRun):
    """A ``LoadRun`` of several client processes: every trace on the driver's clock, the worst
    process's loop lag (``loop_lag_ms``) and usage (``client``), and each process's own figures."""

    processes: list[ProcessFigures] = field(default_factory=list)
    how: str = "processes"  # or "ray"

    @property
    def clock_uncertainty_ms(self) -> float:
        """The largest uncertainty of an applied clock offset (0 when every process shares the
        driver's clock).
        """
        return max(
            (p.clock.uncertainty_ns / 1e6 for p in self.processes if p.clock.applied), default=0.0
        )

    def describe(self) -> dict[str, Any]:
        out = LoadRun.describe(self)  # zero-argument super() does not work in a slots dataclass
        out["client_processes"] = {
            "how": self.how,
            "clock_uncertainty_ms": round(self.clock_uncertainty_ms, 3),
            "processes": [p.to_dict() for p in self.processes],
        }
        return out


def _shifted(trace: RequestTrace, shift: int) -> RequestTrace:
    if shift:
        if trace.intended_ns is not None:
            trace.intended_ns -= shift
        if trace.sent_ns:
            trace.sent_ns -= shift
        if trace.first_byte_ns is not None:
            trace.first_byte_ns -= shift
        trace.event_ns = [t - shift for t in trace.event_ns]
        if trace.end_ns is not None:
            trace.end_ns -= shift
    return trace


def merge(
    spec: LoadSpec,
    workload: Workload,
    parts: Sequence[_Part],
    clocks: Sequence[ClockOffset],
    *,
    calibration: Calibration,
    how: str = "processes",
) -> DistributedRun:
    """The processes' runs as one: traces on the driver's clock, the window from the first measured
    send to the last measured end across all, the worst process's monitors."""
    traces: list[RequestTrace] = []
    figures: list[ProcessFigures] = []
    for part, clock in zip(parts, clocks):
        run, shift = part.run, clock.shift_ns
        traces += [_shifted(t, shift) for t in run.traces]
        measured = bool(run.measured)
        share = (
            run.spec.label if spec.mode == "closed" else f"arrivals i % {len(parts)} == {part.rank}"
        )
        figures.append(
            ProcessFigures(
                part.rank,
                part.host,
                part.pid,
                share,
                len(run.measured),
                run.window_start_ns - shift if measured else None,
                run.window_end_ns - shift if measured else None,
                run.loop_lag_ms,
                run.client,
                clock,
                part.node,
            )
        )
    starts = [p.window_start_ns for p in figures if p.window_start_ns is not None]
    ends = [p.window_end_ns for p in figures if p.window_end_ns is not None]
    start = min(starts) if starts else 0
    end = max(ends) if ends else start
    if spec.mode == "closed":  # tickets were per process: number them in the order they were sent
        traces.sort(key=lambda t: (t.sent_ns or math.inf, t.index))
        for i, t in enumerate(traces):
            t.index = i
    else:
        traces.sort(key=lambda t: t.index)  # the whole schedule's arrival index
    lagged = max(figures, key=lambda p: (p.loop_lag_p99_ms or 0.0, len(p.loop_lag_ms)))
    busiest = max(figures, key=lambda p: p.client.busy_share)
    return DistributedRun(
        spec=spec,
        workload=workload,
        traces=traces,
        window_start_ns=start,
        window_end_ns=end,
        loop_lag_ms=list(lagged.loop_lag_ms),
        client=busiest.client,
        resources=parts[0].run.resources,
        calibration=calibration,
        processes=figures,
        how=how,
    )


async def _run_share(
    share: Share,
    spec: LoadSpec,
    endpoint: Endpoint,
    workload: Workload,
    calibration: Calibration,
    seed: int,
    transport: str,
    signals: _Signals,
) -> LoadRun:
    runner = functools.partial(_ShareRunner, share=share, signals=signals)
    return await run_load_async(
        endpoint,
        spec,
        workload,
        calibration=calibration,
        seed=seed,
        transport=transport,
        runner_class=runner,
    )


# -- same host: one process per core ------------------------------------------------------------


def _process_main(
    share: Share,
    spec: LoadSpec,
    endpoint: Endpoint,
    workload: Workload,
    calibration: Calibration,
    seed: int,
    transport: str,
    ready: Any,
    go: Any,
    start_ns: Any,
    mine: Any,
    everyone: Any,
    results: Any,
) -> None:
    try:
        ready.put(share.rank)
        go.wait()
        share = replace(share, start_ns=start_ns.value)
        run = asyncio.run(
            _run_share(
                share,
                spec,
                endpoint,
                workload,
                calibration,
                seed,
                transport,
                _ProcessSignals(mine, everyone),
            )
        )
        results.put((share.rank, _Part(share.rank, socket.gethostname(), os.getpid(), run), None))
    except BaseException:  # noqa: BLE001  reported to the driver, which raises it
        mine.set()
        results.put((share.rank, None, traceback.format_exc()))


def _get(q: Any, procs: list[Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return q.get(timeout=0.2)
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(
                    f"load process {dead[0].name} exited with {dead[0].exitcode} before {what}"
                ) from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"load processes: no {what} within {timeout_s:g} s") from None


def _run_processes(
    endpoint: Endpoint,
    spec: LoadSpec,
    workload: Workload,
    processes: int,
    calibration: Calibration,
    seed: int,
    transport: str,
    at_window_end: Callable[[], Any],
) -> tuple[list[_Part], list[ClockOffset]]:
    ctx = multiprocessing.get_context("spawn")
    specs = process_specs(spec, processes)
    n = len(specs)
    ready, results = ctx.Queue(), ctx.Queue()
    go, everyone = ctx.Event(), ctx.Event()
    start_ns = ctx.Value("q", 0)
    mine = [ctx.Event() for _ in range(n)]
    procs = [
        ctx.Process(
            target=_process_main,
            name=f"pytest-infer-load-{k}",
            daemon=True,
            args=(
                Share(k, n, spec),
                specs[k],
                endpoint,
                workload,
                calibration,
                seed,
                transport,
                ready,
                go,
                start_ns,
                mine[k],
                everyone,
                results,
            ),
        )
        for k in range(n)
    ]
    for p in procs:
        p.start()
    try:
        for _ in range(n):
            _get(ready, procs, STARTUP_TIMEOUT_S, "ready")
        start_ns.value = time.perf_counter_ns() + int(START_LEAD_S * 1e9)
        go.set()
        # blocking waits: the driver takes no CPU from the processes while they measure
        for event in mine:
            while not event.wait(0.25):
                dead = [p for p in procs if p.exitcode is not None]
                if dead:
                    raise RuntimeError(
                        f"load process {dead[0].name} exited with {dead[0].exitcode} during the "
                        "measured window"
                    )
        everyone.set()
        at_window_end()
        parts: dict[int, _Part] = {}
        while len(parts) < n:
            rank, part, error = _get(
                results, procs, spec.drain_timeout_s + endpoint.timeout + 60, "results"
            )
            if error is not None:
                raise RuntimeError(f"load process {rank} failed:\n{error}")
            parts[rank] = part
        # one host: one clock
        return [parts[k] for k in range(n)], [ClockOffset() for _ in range(n)]
    finally:
        everyone.set()
        go.set()
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(5)


# -- a Ray cluster: the same workers as actors, one per CPU bundle, spread over the nodes --------


class RayLoadWorker:
    """A Ray actor (``ray.remote(RayLoadWorker)``): where it runs, its clock, and one share of a
    load.
    """

    def where(self) -> tuple[str, str, int]:
        # lazy: ray is an optional extra (pytest-infer[ray])
        import ray

        return ray.get_runtime_context().get_node_id(), socket.gethostname(), os.getpid()

    def clock(self) -> int:
        return time.perf_counter_ns()

    def run(
        self,
        share: Share,
        spec: LoadSpec,
        endpoint: Endpoint,
        workload: Workload,
        calibration: Calibration,
        seed: int,
        transport: str,
        flags: Any,
    ) -> _Part:
        run = asyncio.run(
            _run_share(
                share,
                spec,
                endpoint,
                workload,
                calibration,
                seed,
                transport,
                _RaySignals(flags, share.rank),
            )
        )
        node, host, pid = self.where()
        return _Part(share.rank, host, pid, run, node)


class RayFlags:
    """A Ray actor holding the two signals: which shares' measured requests have ended, and whether
    all have.
    """

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.ended: set[int] = set()
        self.everyone = asyncio.Event()

    async def measured_done(self, rank: int) -> None:
        self.ended.add(rank)
        if len(self.ended) >= self.processes:
            self.everyone.set()

    async def release(self) -> None:
        self.everyone.set()

    async def wait_all(self) -> bool:
        await self.everyone.wait()
        return True


def _remote_clock(ray: Any, actor: Any) -> int:
    return int(ray.get(actor.clock.remote()))


def _ray() -> Any:
    try:
        # lazy: ray is an optional extra (pytest-infer[ray])
        import ray
    except ImportError:
        raise RuntimeError(
            "a Ray cluster's load needs Ray: pip install 'pytest-infer[ray]'"
        ) from None
    return ray


def _run_ray(
    endpoint: Endpoint,
    spec: LoadSpec,
    workload: Workload,
    processes: int | None,
    address: str,
    calibration: Calibration,
    seed: int,
    transport: str,
    at_window_end: Callable[[], Any],
    apply_clock_offsets: bool | None,
) -> tuple[list[_Part], list[ClockOffset]]:
    ray = _ray()
    # lazy: ray is an optional extra (pytest-infer[ray])
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, log_to_driver=False)
    pg = None
    actors: list[Any] = []
    flags = None
    try:
        specs = process_specs(spec, processes or max(1, int(ray.cluster_resources().get("CPU", 1))))
        n = len(specs)
        # one core each, over as many nodes as there are
        pg = placement_group([{"CPU": 1}] * n, strategy="SPREAD")
        try:
            ray.get(pg.ready(), timeout=STARTUP_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(
                f"the Ray cluster at {address} has no room for {n} load actors of one CPU each"
            ) from None
        worker = ray.remote(RayLoadWorker)
        actors = [
            worker.options(
                num_cpus=1,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    pg, placement_group_bundle_index=k
                ),
            ).remote()
            for k in range(n)
        ]
        where = ray.get([a.where.remote() for a in actors], timeout=STARTUP_TIMEOUT_S)
        here = ray.get_runtime_context().get_node_id()
        clocks = []
        for actor, (node, _, _) in zip(actors, where):
            measured = clock_offset(functools.partial(_remote_clock, ray, actor))
            clocks.append(
                replace(
                    measured,
                    applied=apply_clock_offsets
                    if apply_clock_offsets is not None
                    else node != here,
                )
            )
        # no CPU of its own: the bundles may hold every one
        flags = ray.remote(num_cpus=0)(RayFlags).remote(n)
        everyone = flags.wait_all.remote()
        start = time.perf_counter_ns() + int(RAY_START_LEAD_S * 1e9)
        refs = [
            a.run.remote(
                Share(k, n, spec, start + clocks[k].shift_ns),
                specs[k],
                endpoint,
                workload,
                calibration,
                seed,
                transport,
                flags,
            )
            for k, a in enumerate(actors)
        ]
        pending = list(refs)
        while True:
            ready, _ = ray.wait([everyone, *pending], num_returns=1)
            if everyone in ready:
                break
            # a share that returned before everyone's measured requests ended failed: raise it
            ray.get(ready[0])
            pending.remove(ready[0])
        at_window_end()
        parts = ray.get(refs)
        for part, (node, _, _) in zip(parts, where):
            part.node = node
        return parts, clocks
    finally:
        if flags is not None:
            flags.release.remote()
        for actor in actors:
            ray.kill(actor)
        if pg is not None:
            remove_placement_group(pg)
        if started:
            ray.shutdown()


def run_load_distributed(
    endpoint: Endpoint,
    spec: LoadSpec,
    workload: Workload,
    *,
    processes: int | None = None,
    ray_address: str | None = None,
    server_pid: int | None = None,
    calibration: Calibration | None = None,
    seed: int = 0,
    transport: str = "auto",
    server_metrics: ServerMetricNames | None = None,
    apply_clock_offsets: bool | None = None,
) -> DistributedRun:
    """:func:`~pytest_infer.load.run_load` from several client processes at once, merged into one
    run.

    ``processes``: client processes (default: one per core of this host, or per CPU of the Ray
    cluster). ``ray_address``: run them as Ray actors on that cluster (``auto``,
    ``ray://host:10001``; an already initialized Ray is used as it is) instead of on this host; the
    endpoint must be reachable from its nodes. ``apply_clock_offsets``: subtract each actor's
    measured clock offset (default: only for actors on another node than the driver's). The driver
    calibrates once, samples the server's resources and scrapes its metrics; the processes only send
    and record.
    """
    # each process's conversations would start at conversation 0
    if getattr(workload, "turns", 1) > 1:
        raise ValueError("multi-turn conversations run from one client process; use run_load")
    if calibration is None:
        with endpoint.http() as sync:
            calibration = calibrate(sync, workload.api, endpoint.model)
    watch = ServerWatch(endpoint, server_metrics) if server_metrics is not None else None
    if watch is not None:
        watch.start()
    at_window_end = watch.at_window_end if watch is not None else (lambda: None)
    with ResourceSampler(server_pid) as sampler:
        if ray_address is not None:
            parts, clocks = _run_ray(
                endpoint,
                spec,
                workload,
                processes,
                ray_address,
                calibration,
                seed,
                transport,
                at_window_end,
                apply_clock_offsets,
            )
        else:
            parts, clocks = _run_processes(
                endpoint,
                spec,
                workload,
                processes or os.cpu_count() or 1,
                calibration,
                seed,
                transport,
                at_window_end,
            )
    run = merge(
        spec,
        workload,
        parts,
        clocks,
        calibration=calibration,
        how="ray" if ray_address is not None else "processes",
    )
    sampler.close_window(run.window_start_ns, run.window_end_ns)
    run.resources = sampler.peak
    if watch is not None:
        watch.finish(sum(t.status == 200 and not t.cancelled for t in run.traces))
        run.server = watch.figures()
    return run
