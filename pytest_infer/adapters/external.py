"""An already-running server (``--infer-endpoint``): nothing to launch, only to detect."""
from __future__ import annotations

import re

import httpx

from .base import Version

# (path, JSON key, framework it betrays)
_VERSION_ROUTES = (
    ("/version", "version", None),  # vLLM (SGLang 0.5.23 has no /version)
    ("/server_info", "version", "sglang"),  # SGLang (0.5.23 also answers the older name)
    ("/get_server_info", "version", "sglang"),  # older SGLang
    ("/info", "version", "tgi"),
)
_OWNERS = {"vllm": "vllm", "sglang": "sglang", "lmdeploy": "lmdeploy", "tensorrt_llm": "trtllm", "huggingface": "transformers"}


def detect_endpoint(client: httpx.Client) -> tuple[str | None, Version, list[str]]:
    """Guess the framework and version behind an endpoint from what it exposes.

    Returns (framework or None, version, served model ids). Every probe is
    optional: a server that answers none of them is still testable.
    """
    framework: str | None = None
    version: Version | None = None
    models: list[str] = []
    server_header = None
    try:
        resp = client.get("/v1/models")
        server_header = resp.headers.get("server")
        if resp.status_code == 200:
            data = resp.json().get("data") or []
            models = [m.get("id") for m in data if isinstance(m, dict) and m.get("id")]
            owners = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
            framework = next((_OWNERS[o] for o in owners if o in _OWNERS), None)
    except (httpx.HTTPError, ValueError):
        pass
    for path, key, betrays in _VERSION_ROUTES:
        try:
            resp = client.get(path)
            if resp.status_code == 200 and isinstance(resp.json(), dict) and resp.json().get(key):
                version = Version(str(resp.json()[key]), source=f"GET {path}")
                framework = framework or betrays
                break
        except (httpx.HTTPError, ValueError):
            continue
    if version is None and server_header:
        match = re.search(r"(\d+\.\d+(?:\.\d+)?)", server_header)
        version = Version(match.group(1) if match else None, source=f"Server: {server_header}")
    return framework, version or Version(None, source="endpoint", error="the endpoint exposes no version"), models
