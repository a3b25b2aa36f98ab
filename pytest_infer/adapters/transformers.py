"""Hugging Face ``transformers serve`` (transformers >= 5): CPU or GPU."""
from __future__ import annotations

from .base import BUNDLED_EXPECTATIONS, LaunchRequest, LaunchSpec, PythonModuleAdapter


class TransformersAdapter(PythonModuleAdapter):
    name = "transformers"
    title = "transformers serve"
    module = "transformers"
    distributions = ("transformers",)
    engine_dirs = ("transformers-*", "transformers")
    owned_by = ("huggingface",)
    expectations = BUNDLED_EXPECTATIONS / "transformers.yaml"

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        # FORCE_MODEL preloads the model, so readiness means "can answer", not "will load".
        argv = [
            request.environment.executable("transformers"), "serve", request.model,
            "--host", request.host,
            "--port", str(request.port),
        ]  # fmt: skip
        env = {"HF_HUB_OFFLINE": "1"} if request.on_cpu_tiny else {}
        if request.on_cpu_tiny:
            argv += ["--device", "cpu", "--dtype", "float32"]
        return LaunchSpec(argv=argv + list(request.extra_args), env=env, ready_paths=("/health", "/v1/models"))
