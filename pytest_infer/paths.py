"""Where bundled data (suites, SLO profiles) and per-user caches live."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath

_PACKAGE = Path(__file__).resolve().parent

# --infer-model's default, the built-in tiny model (pytest_infer/models/tiny.py): here because the
# reports, which import nothing of the run, leave the default model out of a column's heading.
DEFAULT_MODEL = "tiny"
# What a built-in model's cache entry may carry between its name and its recipe's digest: its form
# or dtype.
CACHE_TAGS = ("gguf", "bf16")
_CACHED = re.compile(rf"(?P<name>.+?)(?:-(?:{'|'.join(CACHE_TAGS)}))?-[0-9a-f]{{12}}")


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


def model_cache(name: str, tag: str | None = None, digest: str | None = None) -> Path:
    """Where a built-in model keeps its files: ``models/NAME[-TAG][-DIGEST]`` in the cache, the
    digest that of the recipe that made them, so a changed recipe makes them again
    (``builtin_model_of`` reads the name back)."""
    if tag is not None and tag not in CACHE_TAGS:
        raise ValueError(f"cache tag {tag!r}: builtin_model_of reads only {', '.join(CACHE_TAGS)}")
    return cache_dir() / "models" / "-".join(part for part in (name, tag, digest) if part)


def builtin_model_of(model: str) -> str | None:
    """The built-in model whose cache entry ``model`` is (a folder or file in a ``models``
    folder, named as ``model_cache`` names it), else None: an engine that serves a path
    (transformers serve) reports that folder as its model. Read by name, without a list of the
    models: the reports import nothing of the run."""
    path = PurePath(model.rstrip("/"))
    cached = _CACHED.fullmatch(path.name) if path.parent.name == "models" else None
    return cached["name"] if cached else None
