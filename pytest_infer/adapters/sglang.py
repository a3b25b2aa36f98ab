"""SGLang: ``python -m sglang.launch_server`` (GPU only)."""
from __future__ import annotations

from .base import LaunchRequest, LaunchSpec, PythonModuleAdapter, python_of


class SGLangAdapter(PythonModuleAdapter):
    name = "sglang"
    title = "SGLang"
    module = "sglang"
    distributions = ("sglang",)
    engine_dirs = ("sglang-*", "sglang")

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        argv = [
            python_of(request.environment), "-m", "sglang.launch_server",
            "--model-path", request.model,
            "--served-model-name", request.served_model_name,
            "--host", request.host,
            "--port", str(request.port),
        ]  # fmt: skip
        if request.api_key:
            argv += ["--api-key", request.api_key]
        return LaunchSpec(argv=argv + list(request.extra_args), ready_paths=("/health", "/v1/models"))
