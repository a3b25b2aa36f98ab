"""Where bundled data (suites, SLO profiles) and per-user caches live."""

from __future__ import annotations

import os
import re
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

# The built-in models' names (pytest_infer/models builds and caches them), here because the reports, which import
# nothing of the run, name a built-in model's cached folder by its model; tiny is --infer-model's default.
TINY = "tiny"
GEMMA = "gemma-3-270m"
_CACHED_FOLDER = re.compile(rf"(?P<name>{TINY}|{GEMMA})(?:-gguf|-bf16)?-[0-9a-f]{{12}}")


def bundled(name: str) -> Path:
    """A top-level project folder (``suites``, ``slo``), from a wheel or a checkout.

    A wheel ships them inside the package as ``_bundled/NAME``; an editable
    install or a checkout finds them beside the package.
    """
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled folder {name!r} not found next to {_PACKAGE}")


def cache_dir() -> Path:
    root = os.environ.get("PYTEST_INFER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pytest-infer"
    )
    return Path(root)


def engines_dir() -> Path:
    """Where scripts/install-engines.sh puts one virtual environment per engine."""
    return Path(os.environ.get("PYTEST_INFER_ENGINES") or cache_dir() / "engines")


def builtin_model_of(folder: str) -> str | None:
    """The built-in model whose cached folder or GGUF this is (its name, its form, a digest of its recipe), else None:
    an engine that serves a path (transformers serve) reports that folder as its model."""
    cached = _CACHED_FOLDER.fullmatch(folder)
    return cached["name"] if cached else None
