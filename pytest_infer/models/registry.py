"""The built-in models, each defined in a module of its own (``tiny.py``, ``gemma.py``) as one
``Builtin``: the one place a model string becomes one. A third is one more module, listed here."""

from __future__ import annotations

from ..adapters.base import Builtin
from ..paths import builtin_model_of
from .gemma import GEMMA
from .tiny import TINY

BUILTINS: tuple[Builtin, ...] = (TINY, GEMMA)
_BY_NAME = {builtin.name: builtin for builtin in BUILTINS}


def builtin(model: str) -> Builtin | None:
    """The built-in model ``model`` names, by its name or as the path of its cached files (a server
    that serves a path reports that folder as its model); None for any other model (a hub id or a
    path, which an engine is given as it is)."""
    return _BY_NAME.get(model) or _BY_NAME.get(builtin_model_of(model) or "")
