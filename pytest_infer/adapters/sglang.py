"""SGLang: ``python -m sglang.launch_server`` (GPU builds, and SGLang's CPU engine for ``tiny``).

On a CPU-only machine (``tiny``) it runs SGLang's torch-native CPU path, set up as in
``../shared/engines/sglang-cpu/README.md`` by ``scripts/install-engines.sh sglang``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..results.environment import cpuinfo_field
from .base import (
    OPENAI_ROUTES,
    Deterministic,
    LaunchRequest,
    LaunchSpec,
    Parsers,
    PythonModuleAdapter,
    ServerMetricNames,
    VersionRoute,
    builtin_parser_args,
    python_of,
    routes,
)


# The flags SGLang 0.5.23's CPU engine needs for a built-in model: no overlap scheduler on CPU, a KV
# pool sized for 2 cores and 24 GiB (the default asks for most of the memory), the checkpoint kept
# in its dtype (``--dtype auto`` runs tiny's float32 in float16), and an idle scheduler that waits
# on its sockets: without --sleep-on-idle it spins at ~95% of a core between requests (1.4% with
# it), a core the test client on 2 cores needs. On a CPU with AMX tiles SGLang takes its sgl_kernel
# path instead: the CPU kernel built for 0.5.23 here has no float32 RMSNorm there ("rmsnorm_kernel"
# not implemented for 'Float') and an older extend-attention signature than 0.5.23's AMX attention
# backend calls. bfloat16 with the torch-native attention backend serves.
def cpu_tiny_args(amx: bool, dtype: str = "float32") -> tuple[str, ...]:
    kind = (
        ("--dtype", "bfloat16", "--attention-backend", "torch_native")
        if amx
        else ("--dtype", dtype)
    )
    return (
        "--device",
        "cpu",
        "--disable-overlap-schedule",
        "--max-total-tokens",
        "4096",
        *kind,
        "--sleep-on-idle",
    )


# SGLang (since 0.5.20) keeps no Responses unless started with it: retrieving one,
# previous_response_id and background requests answer 400 "Response store is disabled", a failure of
# the launch, not of the server. vLLM gets the same through VLLM_ENABLE_RESPONSES_API_STORE=1.
RESPONSE_STORE = "--enable-response-store"

CPU_TINY_ENV = {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1"}


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether SGLang's CPU engine will take its AMX kernels here (the ``amx_tile`` flag, as torch
    reads it).
    """
    return "amx_tile" in (cpuinfo_field("flags", cpuinfo) or "").split()


# as SGLang documents them (its "Production Metrics" reference page; --enable-metrics); not checked
# against a server
METRICS = ServerMetricNames(
    prompt_tokens="sglang:prompt_tokens_total",
    output_tokens="sglang:generation_tokens_total",
    requests="sglang:num_requests_total",
    ttft="sglang:time_to_first_token_seconds",
    itl="sglang:inter_token_latency_seconds",
    kv_cache_usage="sglang:token_usage",
    running="sglang:num_running_reqs",
    waiting="sglang:num_queue_reqs",
)

# SGLang's native routes (its http_server), beside the OpenAI ones under /v1
KNOWN_ROUTES = (
    *OPENAI_ROUTES,
    *routes(
        "read",
        "GET /health",
        "GET /get_model_info",
        "GET /model_info",
        "GET /get_load",
        "GET /metrics",
    ),
    *routes(
        "generate",
        "POST /generate",
        "GET /health_generate",
        "POST /encode",
        "POST /classify",
        "POST /v1/embeddings",
    ),
    *routes(
        "change-state",
        "POST /flush_cache",
        "POST /start_profile",
        "POST /stop_profile",
        "POST /update_weights_from_disk",
        "POST /release_memory_occupation",
        "POST /resume_memory_occupation",
        "POST /slow_down",
        "POST /abort_request",
        "POST /pause_generation",
        "POST /continue_generation",
        "POST /load_lora_adapter",
        "POST /unload_lora_adapter",
        "POST /configure_logging",
        "POST /open_session",
        "POST /close_session",
    ),
    *routes("internals", "GET /get_server_info", "GET /server_info", "POST /get_weights_by_name"),
)

_key_files: dict[str, Path] = {}


def api_key_config(api_key: str) -> Path:
    """A private YAML file for SGLang's ``--config`` that holds the API key.

    SGLang (0.5.23) reads its key only from ``--api-key`` or from a ``--config`` YAML file
    (``api-key: KEY``, merged into its arguments in-process); no environment variable.
    argv is logged and visible in ``ps``, so the key goes into a 0600 file in a 0700
    folder, removed when this process exits. SGLang reads it once, at start.
    """
    if api_key not in _key_files:
        folder = Path(tempfile.mkdtemp(prefix="pytest-infer-sglang-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "api-key.yaml"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            # a JSON string is a YAML double-quoted scalar
            fh.write(f"api-key: {json.dumps(api_key)}\n")
        _key_files[api_key] = path
    return _key_files[api_key]


class SGLangAdapter(PythonModuleAdapter):
    name = "sglang"
    title = "SGLang"
    deterministic = Deterministic(
        "deterministic inference", args=("--enable-deterministic-inference",)
    )
    module = "sglang"
    distributions = ("sglang",)
    engine_dirs = ("sglang-*", "sglang")
    accepts_ignore_eos = True
    owned_by = ("sglang",)
    # 0.5.23 has no /version; it still answers the older /get_server_info, asked second
    version_routes = (VersionRoute("/server_info"), VersionRoute("/get_server_info"))
    server_metrics = METRICS
    known_routes = KNOWN_ROUTES

    def parser_args(self, parsers: Parsers, *, scripted: bool = False) -> tuple[str, ...]:
        args: tuple[str, ...] = ()
        if parsers.tool:
            args += ("--tool-call-parser", parsers.tool)
        if parsers.reasoning:
            args += ("--reasoning-parser", parsers.reasoning)
        return args

    def forced_text_fields(self, regex: str, version: str | None = None) -> dict[str, Any] | None:
        """SGLang's sampling field ``regex``, which its OpenAI routes pass through, applied from the
        first token: with a reasoning parser on, SGLang holds a grammar back until the reasoning
        ends unless the request's ``custom_params`` say the grammar describes the reasoning too (its
        own key for that, as its server sets it)."""
        return {"regex": regex, "custom_params": {"__sglang_reasoning_in_grammar": True}}

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        argv = [
            python_of(request.environment),
            "-m",
            "sglang.launch_server",
            "--model-path",
            request.model,
            "--served-model-name",
            request.served_model_name,
            "--host",
            request.host,
            "--port",
            str(request.port),
            "--enable-metrics",  # /metrics answers only with it
            RESPONSE_STORE,
        ]
        env: dict[str, str] = {}
        if request.builtin:
            argv += cpu_tiny_args(cpu_has_amx(), request.builtin.dtype)
            argv += builtin_parser_args(self, request)
            env.update(CPU_TINY_ENV)
        if request.api_key:
            # never on argv: argv is logged and visible in ps (SGLang has no key variable)
            argv += ["--config", str(api_key_config(request.api_key))]
        return LaunchSpec(
            argv=argv + list(request.extra_args), env=env, ready_paths=("/health", "/v1/models")
        )
