"""Kubernetes' inference-perf (``inference-perf --config_file``): its per-request lifecycle report.

It has no warm-up: a first stage of ``warmup`` requests at the same concurrency stands in for one, and
the measured requests are the last ``requests`` started. Its per-request records carry each chunk's
arrival on CLOCK_MONOTONIC. Each of its worker processes (one per core by default) holds at most
``worker_max_concurrency`` requests in flight (default 100): it is raised to the streams asked for.
YAML is a superset of JSON, so its config file is written as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import Load, Measured, Peer, PeerError, read_json

CONFIG = "config.yml"
PER_REQUEST = "reports/per_request_lifecycle_metrics.json"
LAST_STAGE = "reports/stage_1_lifecycle_metrics.json"


class InferencePerf(Peer):
    name = "inference-perf"
    package = env_name = "inference-perf"

    def command(self, load: Load, url: str, out: Path, tokenizer: Path) -> list[str]:
        def fixed(n: int) -> dict:
            return {"min": n, "max": n, "mean": n, "std_dev": 0, "type": "fixed"}

        config = {
            "api": {"type": "completion", "streaming": True},
            "data": {
                "type": "random",
                "input_distribution": fixed(load.input_tokens),
                "output_distribution": fixed(load.output_tokens),
            },
            "load": {
                "type": "concurrent", "interval": 0, "worker_max_concurrency": load.streams,
                "stages": [
                    {"num_requests": load.warmup, "concurrency_level": load.streams},
                    {"num_requests": load.requests, "concurrency_level": load.streams},
                ],
            },
            "server": {"type": "vllm", "model_name": load.model, "base_url": url, "ignore_eos": True},
            "tokenizer": {"pretrained_model_name_or_path": str(tokenizer)},
            "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}},
            "storage": {"local_storage": {"path": str(out / "reports")}},
        }  # fmt: skip
        (out / CONFIG).write_text(json.dumps(config, indent=1))
        return [str(self.python().parent / "inference-perf"), "--config_file", str(out / CONFIG)]

    def env(self) -> dict[str, str]:
        return {"HF_HUB_OFFLINE": "1"}

    def parse(self, out: Path, load: Load) -> Measured:
        records = read_json(out / PER_REQUEST)
        if not isinstance(records, list):
            raise PeerError(f"{PER_REQUEST} is not a list of requests")
        try:
            ok = sorted((r for r in records if not r.get("error")), key=lambda r: r["start_time"])[
                -load.requests :
            ]
            ttft, itl = [], []
            for record in ok:
                times = record["info"]["response_metrics"]["chunk_times"]
                if not times:
                    continue
                ttft.append((times[0] - record["start_time"]) * 1000)
                itl += [(b - a) * 1000 for a, b in zip(times, times[1:])]
        except (KeyError, TypeError) as exc:
            raise PeerError(
                f"{PER_REQUEST} is not an inference-perf per-request report: {exc!r}"
            ) from exc
        stage = read_json(out / LAST_STAGE)
        throughput = (
            stage.get("successes", {}).get("throughput", {}).get("output_tokens_per_sec")
            if isinstance(stage, dict)
            else None
        )
        return Measured(ttft, itl, throughput)
