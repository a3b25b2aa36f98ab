"""Where bundled data (suites, SLO profiles) and per-user caches live."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


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
