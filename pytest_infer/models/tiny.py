"""The built-in ``tiny`` model, ``--infer-model``'s default: random weights built here, no download.
Built once per engine interpreter, then cached; its GGUF, for llama.cpp, made from that folder once
with llama.cpp's own converter (``tiny_gguf_build.py``: why it needs a placeholder merge)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from types import MappingProxyType

from filelock import FileLock

from ..adapters.base import Builtin, Environment, python_of
from ..adapters.parsers import Parsers
from ..paths import model_cache
from .gemma import ModelError, make_folder
from .tiny_build import MAX_POSITIONS

NAME = "tiny"
_BUILDER = Path(__file__).with_name("tiny_build.py")
_GGUF_BUILDER = Path(__file__).with_name("tiny_gguf_build.py")


def tiny_model_dir(python: str) -> Path:
    """Build (or reuse) the tiny model with ``python``, which must have torch and transformers.

    The cache key is the builder's own source, so a change to the recipe rebuilds.
    Concurrent sessions wait on a lock rather than writing the same folder twice.
    """
    digest = hashlib.sha256(_BUILDER.read_bytes()).hexdigest()[:12]
    target = model_cache(NAME, digest=digest)
    marker = target / "pytest_infer_tiny.json"
    if marker.exists():
        return target

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if marker.exists():
            return target
        staging = target.with_name(target.name + f".tmp{os.getpid()}")
        proc = subprocess.run(
            [python, str(_BUILDER), str(staging)],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            timeout=600,
        )
        if proc.returncode != 0 or not (staging / "pytest_infer_tiny.json").exists():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise RuntimeError(
                f"building the tiny model with {python} failed (exit {proc.returncode}):\n{tail}"
            )
        os.replace(staging, target)
    return target


def tiny_gguf(python: str, converter: Path) -> Path:
    """The tiny model as one GGUF file, converted with ``python`` (torch, transformers, ``gguf``) by
    the ``convert_hf_to_gguf.py`` in ``converter``, from the folder that interpreter builds. Cached
    beside the folder, keyed by both recipes; the first llama.cpp engine to ask converts it, and
    every other reads that file.
    """
    folder = tiny_model_dir(python)
    digest = hashlib.sha256(_BUILDER.read_bytes() + _GGUF_BUILDER.read_bytes()).hexdigest()[:12]

    def convert(staging: Path) -> None:
        proc = subprocess.run(
            [python, str(_GGUF_BUILDER), str(folder), str(converter), str(staging / "tiny.gguf")],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            timeout=600,
        )
        if proc.returncode != 0 or not (staging / "tiny.gguf").exists():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise ModelError(
                f"converting tiny to GGUF with {python} failed (exit {proc.returncode}):\n{tail}"
            )

    return make_folder(model_cache(NAME, "gguf", digest), convert) / "tiny.gguf"


def converter_of(environment: Environment) -> Path:
    """The folder of llama.cpp's ``convert_hf_to_gguf.py`` that the install step keeps beside a
    llama.cpp engine's interpreter, which makes tiny's GGUF."""
    folder = environment.bin_dir.parent / "share" / "llama.cpp" if environment.bin_dir else None
    if folder is None or not (folder / "convert_hf_to_gguf.py").exists():
        raise ModelError(
            f"{environment.label} keeps no llama.cpp converter, which makes the tiny model's"
            " GGUF: install it with scripts/install-engines.sh"
        )
    return folder


TINY = Builtin(
    name=NAME,
    files=MappingProxyType(
        {
            "folder": lambda env: tiny_model_dir(python_of(env)),
            "gguf": lambda env: tiny_gguf(python_of(env), converter_of(env)),
        }
    ),
    dtype="float32",
    context=1024,
    own_context=MAX_POSITIONS,  # the same on every engine, and small enough for a CPU to fill
    # pythonic calls and Qwen3's thinking, which SGLang parses only where a request asks to think
    # (enable_thinking) or the text opens with <think>: the model's own text stays content, and
    # scripted output drives both parsers (vLLM: adapters/vllm.py)
    parsers=MappingProxyType(
        {
            "vllm": Parsers(tool="pythonic", reasoning="qwen3"),
            "sglang": Parsers(tool="pythonic", reasoning="qwen3"),
        }
    ),
    scripted=True,
)
