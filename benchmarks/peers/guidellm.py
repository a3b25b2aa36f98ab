"""guidellm (``guidellm run``) from a scenario file: per-request timings in its JSON report.

It keeps the first-token and last-token times of each request, not every token's, so its ITL is each
request's mean gap ((last - first) / (tokens - 1)), the figure it reports itself. Requests of its warm-up
are in the report too: the measured ones are the last ``requests`` started.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import Load, Measured, Peer, PeerError, read_json

REPORT = "benchmarks.json"
SCENARIO = "scenario.json"


class GuideLLM(Peer):
    name = "guidellm"
    package = env_name = "guidellm"

    def command(self, load: Load, url: str, out: Path, tokenizer: Path) -> list[str]:
        scenario = {
            "spec": {
                "backend": {
                    "kind": "openai_http", "target": url, "model": load.model, "request_format": "/v1/completions",
                },
                "profile": {
                    "kind": "concurrent", "streams": [load.streams],
                    "warmup": {"value": load.warmup, "mode": "requests"},
                },
                "constraints": [{"kind": "max_requests", "count": load.warmup + load.requests}],
                "tokenizer": {"kind": "hf_auto", "model": str(tokenizer)},
                "data": [
                    {"kind": "synthetic_text", "prompt_tokens": load.input_tokens, "output_tokens": load.output_tokens}
                ],
                "outputs": [{"kind": "json", "path": str(out / REPORT)}],
            }
        }  # fmt: skip
        (out / SCENARIO).write_text(json.dumps(scenario, indent=1))
        return [
            str(self.python().parent / "guidellm"),
            "run",
            "--scenario",
            str(out / SCENARIO),
            "--disable-progress",
        ]

    def env(self) -> dict[str, str]:
        return {"HF_HUB_OFFLINE": "1"}

    def parse(self, out: Path, load: Load) -> Measured:
        data = read_json(out / REPORT)
        try:
            benchmark = data["benchmarks"][0]  # type: ignore[index]
            requests = sorted(
                benchmark["requests"]["successful"],
                key=lambda r: r["info"]["timings"]["request_start"],
            )
            requests = requests[-load.requests :]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise PeerError(
                f"{REPORT} is not a guidellm report with one benchmark: {exc!r}"
            ) from exc
        ttft: list[float] = []
        itl: list[float] = []
        for request in requests:
            t = request["info"]["timings"]
            if t.get("first_token_iteration") is None:
                continue
            ttft.append((t["first_token_iteration"] - t["request_start"]) * 1000)
            tokens = (
                request.get("output_metrics", {}).get("text_tokens")
                or t.get("token_iterations")
                or 0
            )
            if tokens > 1:
                itl.append(
                    (t["last_token_iteration"] - t["first_token_iteration"]) * 1000 / (tokens - 1)
                )
        throughput = (
            benchmark.get("metrics", {})
            .get("output_tokens_per_second", {})
            .get("successful", {})
            .get("mean")
        )
        return Measured(ttft, itl, throughput, itl_kind="per-request mean")
