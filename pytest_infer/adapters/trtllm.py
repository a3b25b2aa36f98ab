"""TensorRT-LLM: ``trtllm-serve`` (GPU only)."""

from __future__ import annotations

from .base import LaunchRequest, LaunchSpec, PythonModuleAdapter


class TensorRTLLMAdapter(PythonModuleAdapter):
    name = "trtllm"
    title = "TensorRT-LLM"
    module = "tensorrt_llm"
    distributions = ("tensorrt-llm", "tensorrt_llm")
    engine_dirs = ("tensorrt-llm-*", "trtllm-*", "trtllm")
    accepts_ignore_eos = True
    owned_by = ("tensorrt_llm",)

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        argv = [
            request.environment.executable("trtllm-serve"),
            request.model,
            "--host",
            request.host,
            "--port",
            str(request.port),
        ]
        # trtllm-serve names the model by its path: recent releases document --served_model_name,
        # 0.x has none, so it is not passed; no release has an API-key flag (put it behind a proxy
        # for that).
        notes = (
            ("trtllm-serve reads no API key: the key is sent, but this server does not check it",)
            if request.api_key
            else ()
        )
        return LaunchSpec(
            argv=argv + list(request.extra_args), ready_paths=("/health", "/v1/models"), notes=notes
        )
