"""LMDeploy: ``python -m lmdeploy serve api_server --backend pytorch`` (GPU only).

Everything here was read off LMDeploy 0.18.0's code (``lmdeploy/cli``, ``lmdeploy/serve``,
``lmdeploy/metrics``), from code, not yet seen running: no GPU has served it to the plugin
(docs/gpu-runners.md, "LMDeploy").
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .base import (
    OPENAI_ROUTES,
    LaunchRequest,
    LaunchSpec,
    PythonModuleAdapter,
    ServerMetricNames,
    launch_context,
    python_of,
    routes,
)

KEY_VARIABLE = "PYTEST_INFER_SERVER_API_KEY"
# LMDeploy reads its keys only from ``--api-keys`` (``ArgumentHelper.api_keys``;
# ``serve(api_keys=...)``): no variable, no file. The key is added to sys.argv inside the
# interpreter, taken from a variable, so the OS argv (ps, the logged command line) never holds it.
WITH_KEY = (
    "import os, sys; sys.argv[0] = 'lmdeploy'; "
    f"sys.argv += ['--api-keys', os.environ.pop({KEY_VARIABLE!r})]; "
    "from lmdeploy.cli import run; run()"
)
# --dtype takes these and 'auto' (FP16 for an FP32 model such as tiny)
DTYPES = ("float16", "bfloat16")
# KV cache blocks for a built-in model: 512 blocks of 64 tokens, 32 whole contexts of tiny at once.
# Without it the engine takes 80% of the free GPU memory (--cache-max-entry-count 0.8), which the
# GPU memory figure would report.
BUILTIN_KV_BLOCKS = 512
# Requests decoded at once for a built-in model: the engine captures a CUDA graph per batch size up
# to it at start (1, 2, 4 ... 256, then every 256: twelve graphs at the 1024 it picks for an H200,
# get_max_batch_size).
BUILTIN_BATCH = 64

# from lmdeploy/metrics/loggers.py; /metrics is mounted unless --disable-metrics (on by default)
METRICS = ServerMetricNames(
    requests="lmdeploy:request_success_total",  # one series per finished_reason
    prompt_tokens="lmdeploy:prompt_tokens_total",
    output_tokens="lmdeploy:generation_tokens_total",
    ttft="lmdeploy:time_to_first_token_seconds",
    itl="lmdeploy:iter_token_latency",  # seconds, though its name does not say so
    queue="lmdeploy:request_queue_time_seconds",
    kv_cache_usage="lmdeploy:gpu_cache_usage_perc",
    running="lmdeploy:num_requests_running",
    waiting="lmdeploy:num_requests_waiting",
)

# Every route of api_server.py's routers (openai/endpoints, chat_completions, responses, anthropic)
# and /metrics. Its key guards every path but /health, /docs, /redoc and /nodes
# (AuthenticationMiddleware), /metrics included. GET /terminate ends the server (only with
# --allow-terminate-by-client; the security probe never sends a GET there).
KNOWN_ROUTES = (
    *OPENAI_ROUTES,
    *routes(
        "read",
        "GET /health",
        "GET /is_sleeping",
        "GET /metrics",
        "GET /anthropic/v1/models",
        "POST /v1/encode",
        "POST /v1/messages/count_tokens",
    ),
    *routes(
        "generate",
        "POST /v1/responses",
        "POST /v1/messages",
        "POST /generate",
        "POST /v1/embeddings",
        "POST /pooling",
        "POST /get_ppl",
    ),
    *routes(
        "change-state",
        "GET /terminate",
        "POST /update_weights",
        "POST /update_weights_from_ipc",
        "POST /init_weights_update_group",
        "POST /update_weights_from_distributed",
        "POST /destroy_weights_update_group",
        "POST /sleep",
        "POST /wakeup",
        "POST /abort_request",
        "POST /distserve/p2p_initialize",
        "POST /distserve/p2p_connect",
        "POST /distserve/p2p_drop_connect",
        "POST /distserve/free_cache",
    ),
    *routes("internals", "GET /distserve/engine_info", "GET /update_weights_from_ipc"),
)


def chat_template_config(model: str) -> str:
    """A chat-template file that makes LMDeploy render the model's own template (``hf``,
    HFChatTemplate).

    Without one it takes the first built-in template whose ``match`` accepts the model's path, a
    name match; its CLI takes a file only (a JSON string fails its registered-name check), and
    ``model_path`` must be in it, since the CLI does not pass the model's path on with a file.
    """
    path = Path(f"{model}.lmdeploy-chat-template.json")
    text = json.dumps({"model_name": "hf", "model_path": model})
    if not path.exists() or path.read_text() != text:
        staged = path.with_name(f".{path.name}.{os.getpid()}")
        staged.write_text(text)
        staged.replace(path)
    return str(path)


class LMDeployAdapter(PythonModuleAdapter):
    name = "lmdeploy"
    title = "LMDeploy"
    module = "lmdeploy"
    distributions = ("lmdeploy",)
    engine_dirs = ("lmdeploy-*", "lmdeploy")
    accepts_ignore_eos = True
    owned_by = ("lmdeploy",)  # ModelCard.owned_by
    server_metrics = METRICS
    known_routes = KNOWN_ROUTES

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        """The PyTorch engine (TurboMind is the CLI's default; a carried LMDeploy has no TurboMind
        binaries), started as a module of the environment's interpreter, so a release carried as a
        folder on PYTHONPATH runs too."""
        args = [
            "serve",
            "api_server",
            request.model,
            "--backend",
            "pytorch",
            "--model-name",
            request.served_model_name,
            "--server-name",
            request.host,
            "--server-port",
            str(request.port),
        ]
        if request.builtin:
            args += ["--chat-template", chat_template_config(request.model)]
            args += ["--session-len", str(request.builtin.context)]
            args += [
                "--num-gpu-blocks",
                str(BUILTIN_KV_BLOCKS),
                "--max-batch-size",
                str(BUILTIN_BATCH),
            ]
            if request.builtin.dtype in DTYPES:
                args += ["--dtype", request.builtin.dtype]
        args += list(request.extra_args)
        python = python_of(request.environment)
        context = launch_context(request, "--session-len")
        if not request.api_key:
            return LaunchSpec(
                argv=[python, "-m", "lmdeploy", *args],
                ready_paths=("/health", "/v1/models"),
                context=context,
            )
        return LaunchSpec(
            argv=[python, "-c", WITH_KEY, *args],
            env={KEY_VARIABLE: request.api_key},
            ready_paths=("/health", "/v1/models"),
            context=context,
        )
