"""Text Generation Inference: ``text-generation-launcher`` or its container image (GPU only)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from .base import (
    BaseAdapter,
    Environment,
    FrameworkVersion,
    LaunchRequest,
    LaunchSpec,
    ServerMetricNames,
    VersionRoute,
)

# as TGI documents them (reference/metrics); not checked against a server. TGI counts tokens only in
# per-request histograms, whose sums are the totals; it has no time-to-first-token histogram.
METRICS = ServerMetricNames(
    requests="tgi_request_count_total",
    prompt_tokens="tgi_request_input_length_sum",
    output_tokens="tgi_request_generated_tokens_sum",
    queue="tgi_request_queue_duration",
    running="tgi_batch_current_size",
    waiting="tgi_queue_size",
)


class TGIAdapter(BaseAdapter):
    name = "tgi"
    title = "TGI"
    structured_output_field = "grammar"
    version_routes = (VersionRoute("/info"),)
    server_metrics = METRICS

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        env = request.environment
        args = ["--model-id", request.model, *request.extra_args]
        if env.image is not None:
            # The container listens on 80; publish it on the chosen loopback port only.
            argv = [
                "docker",
                "run",
                "--rm",
                "--gpus",
                "all",
                "--shm-size",
                "1g",
                "-p",
                f"{request.host}:{request.port}:80",
            ]
            if request.api_key:
                argv += ["-e", "API_KEY"]  # value from the environment, not the argv
            argv += [env.image, *args]
            return LaunchSpec(
                argv=argv,
                env={"API_KEY": request.api_key} if request.api_key else {},
                listens_in_tree=False,
            )
        argv = [
            env.executable("text-generation-launcher"),
            *args,
            "--hostname",
            request.host,
            "--port",
            str(request.port),
        ]
        return LaunchSpec(argv=argv, env={"API_KEY": request.api_key} if request.api_key else {})

    def detect_version(self, environment: Environment) -> FrameworkVersion:
        if environment.image is not None:
            tag = (
                environment.image.rsplit(":", 1)[-1]
                if ":" in environment.image.rsplit("/", 1)[-1]
                else None
            )
            return FrameworkVersion(
                tag, source="image tag", error=None if tag else "image has no tag"
            )
        launcher = environment.executable("text-generation-launcher")
        try:
            out = subprocess.run(
                [launcher, "--version"], capture_output=True, text=True, timeout=60
            ).stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            return FrameworkVersion(None, error=f"{launcher}: {exc}")
        match = re.search(r"(\d+\.\d+\.\d+\S*)", out)
        return FrameworkVersion(
            match.group(1) if match else None,
            source=f"{launcher} --version",
            error=None if match else out[-200:],
        )

    def structured_output_body(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {"grammar": {"type": "json", "value": schema}}
