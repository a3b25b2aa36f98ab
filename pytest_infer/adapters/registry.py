"""The one table of framework adapters, by the name users type."""
from __future__ import annotations

from .base import Adapter
from .lmdeploy import LMDeployAdapter
from .sglang import SGLangAdapter
from .tgi import TGIAdapter
from .transformers import TransformersAdapter
from .trtllm import TensorRTLLMAdapter
from .vllm import VLLMAdapter

ADAPTERS: dict[str, Adapter] = {
    adapter.name: adapter
    for adapter in (VLLMAdapter(), SGLangAdapter(), LMDeployAdapter(), TensorRTLLMAdapter(), TGIAdapter(), TransformersAdapter())
}


def names() -> list[str]:
    return list(ADAPTERS)


def get(name: str) -> Adapter:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise KeyError(f"unknown framework {name!r}; valid: {', '.join(ADAPTERS)}") from None
