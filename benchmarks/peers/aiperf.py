"""NVIDIA's AIPerf (``aiperf profile``): per-request records in ``profile_export.jsonl``.

Its offline mode (HF_HUB_OFFLINE=1) looks a local tokenizer folder up as a hub snapshot and fails, so it
runs without it: a local folder is read from disk either way. Server metrics and GPU telemetry are off
(the paced server has neither to offer beyond counters), the UI is off.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import Load, Measured, Peer, PeerError, read_json

RECORDS = "profile_export.jsonl"
SUMMARY = "profile_export_aiperf.json"


class AIPerf(Peer):
    name = "aiperf"
    package = env_name = "aiperf"

    def command(self, load: Load, url: str, out: Path, tokenizer: Path) -> list[str]:
        return [
            str(self.python().parent / "aiperf"), "profile", "--model", load.model, "--url", url,
            "--endpoint-type", "completions", "--streaming", "--tokenizer", str(tokenizer),
            "--isl", str(load.input_tokens), "--isl-stddev", "0", "--osl", str(load.output_tokens),
            "--osl-stddev", "0", "--extra-inputs", "ignore_eos:true", "--concurrency", str(load.streams),
            "--request-count", str(load.requests), "--warmup-request-count", str(load.warmup),
            "--random-seed", "0", "--artifact-dir", str(out), "--export-level", "records", "--ui", "none",
            "--no-server-metrics", "--no-gpu-telemetry",
        ]  # fmt: skip

    def parse(self, out: Path, load: Load) -> Measured:
        path = out / RECORDS
        if not path.exists():
            raise PeerError(f"no {RECORDS} in {out}")
        ttft: list[float] = []
        itl: list[float] = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                meta, metrics = record["metadata"], record["metrics"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise PeerError(
                    f"{RECORDS} line {number} is not an AIPerf record: {exc!r}"
                ) from exc
            if meta.get("benchmark_phase") != "profiling" or meta.get("was_cancelled"):
                continue
            if "time_to_first_token" not in metrics:  # a failed request
                continue
            ttft.append(float(metrics["time_to_first_token"]["value"]))
            itl += [float(x) for x in metrics.get("inter_chunk_latency", {}).get("value", [])]
        summary = read_json(out / SUMMARY)
        throughput = (
            summary.get("output_token_throughput", {}).get("avg")
            if isinstance(summary, dict)
            else None
        )
        return Measured(ttft, itl, throughput)
