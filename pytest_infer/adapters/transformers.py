"""Hugging Face ``transformers serve`` (transformers >= 5): CPU or GPU."""

from __future__ import annotations

from pathlib import Path

from .base import OPENAI_ROUTES, LaunchRequest, LaunchSpec, PythonModuleAdapter, routes


class TransformersAdapter(PythonModuleAdapter):
    name = "transformers"
    title = "transformers serve"
    module = "transformers"
    distributions = ("transformers",)
    engine_dirs = ("transformers-*", "transformers")
    owned_by = ("huggingface",)
    # transformers serve (5.x) takes no API key at all; /reset unloads the model, /load_model loads
    # any hub model
    known_routes = (
        *OPENAI_ROUTES,
        *routes("read", "GET /health"),
        *routes("generate", "POST /v1/responses"),
        *routes("change-state", "POST /load_model", "POST /reset"),
    )

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        # FORCE_MODEL preloads the model, so readiness means "can answer", not "will load".
        argv = [
            request.environment.executable("transformers"),
            "serve",
            request.model,
            "--host",
            request.host,
            "--port",
            str(request.port),
        ]
        env: dict[str, str] = {}
        if request.builtin:
            # 5.17's /v1/models answers 500 on a machine without a hub cache folder (a fresh GPU
            # runner), so the server never turns ready; the tiny model's own empty one, offline,
            # lists nothing and loads nothing.
            hub = Path(request.model).with_name("hf-hub")
            hub.mkdir(parents=True, exist_ok=True)
            env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub)}
            # on CPU unless the run names a device (``--infer-server-arg=--device
            # --infer-server-arg=cuda``)
            given = {arg.split("=", 1)[0] for arg in request.extra_args}
            argv += [
                x
                for flag, value in (("--device", "cpu"), ("--dtype", request.builtin.dtype))
                if flag not in given
                for x in (flag, value)
            ]
        return LaunchSpec(
            argv=argv + list(request.extra_args),
            env=env,
            ready_paths=("/health", "/v1/models"),
            served_model=request.model,  # a model is named by its path
        )
