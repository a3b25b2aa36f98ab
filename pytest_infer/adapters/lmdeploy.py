"""LMDeploy: ``lmdeploy serve api_server`` (GPU only)."""
from __future__ import annotations

from .base import LaunchRequest, LaunchSpec, PythonModuleAdapter


class LMDeployAdapter(PythonModuleAdapter):
    name = "lmdeploy"
    title = "LMDeploy"
    module = "lmdeploy"
    distributions = ("lmdeploy",)
    engine_dirs = ("lmdeploy-*", "lmdeploy")

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        argv = [
            request.environment.executable("lmdeploy"), "serve", "api_server", request.model,
            "--model-name", request.served_model_name,
            "--server-name", request.host,
            "--server-port", str(request.port),
        ]  # fmt: skip
        if request.api_key:
            argv += ["--api-keys", request.api_key]
        # LMDeploy has no /health before 0.7; /v1/models answers once the engine is up.
        return LaunchSpec(argv=argv + list(request.extra_args), ready_paths=("/v1/models",))
