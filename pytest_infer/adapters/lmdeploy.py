"""LMDeploy: ``lmdeploy serve api_server`` (GPU only)."""

from __future__ import annotations

from .base import LaunchRequest, LaunchSpec, PythonModuleAdapter, python_of

KEY_VARIABLE = "PYTEST_INFER_SERVER_API_KEY"
# LMDeploy reads its keys only from ``--api-keys``: no variable, no file. The key is added to
# sys.argv inside the interpreter, taken from a variable, so the OS argv (ps, the logged
# command line) never holds it.
WITH_KEY = (
    "import os, sys; sys.argv[0] = 'lmdeploy'; "
    f"sys.argv += ['--api-keys', os.environ.pop({KEY_VARIABLE!r})]; "
    "from lmdeploy.cli import run; run()"
)


class LMDeployAdapter(PythonModuleAdapter):
    name = "lmdeploy"
    title = "LMDeploy"
    module = "lmdeploy"
    distributions = ("lmdeploy",)
    engine_dirs = ("lmdeploy-*", "lmdeploy")
    accepts_ignore_eos = True
    owned_by = ("lmdeploy",)

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        argv = [
            request.environment.executable("lmdeploy"), "serve", "api_server", request.model,
            "--model-name", request.served_model_name,
            "--server-name", request.host,
            "--server-port", str(request.port),
        ]  # fmt: skip
        argv += list(request.extra_args)
        env = {}
        if request.api_key:
            argv = [python_of(request.environment), "-c", WITH_KEY, *argv[1:]]
            env[KEY_VARIABLE] = request.api_key
        # LMDeploy has no /health before 0.7; /v1/models answers once the engine is up.
        return LaunchSpec(argv=argv, env=env, ready_paths=("/v1/models",))
