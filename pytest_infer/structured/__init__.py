"""Structured output under constrained decoding: schema strategies, outcome classes, runs, reproducers.

Public API for users' own tests: ``schemas`` (a Hypothesis strategy of valid,
satisfiable JSON Schemas), ``classify_output`` and ``Outcome``, and
``StructuredRunner`` to send a schema to a server and get a classified ``Attempt``.
"""

from __future__ import annotations

import warnings
from typing import Any

from .._lazy import exports

_NAMES = {
    "Classified": "classify",
    "FAILURES": "classify",
    "MATRIX_CLASSES": "classify",
    "Outcome": "classify",
    "classify_output": "classify",
    "is_json_prefix": "classify",
    "strict_loads": "classify",
    "validate": "classify",
    "Attempt": "runner",
    "RequestPath": "runner",
    "Sampling": "runner",
    "StructuredRunner": "runner",
    "paths_for": "runner",
    "KEYWORDS": "strategies",
    "keywords_of": "strategies",
    "schemas": "strategies",
    "schemas_with_instances": "strategies",
    "token_budget": "strategies",
}
_getattr, __dir__ = exports(__name__, _NAMES)


def __getattr__(name: str) -> Any:
    if name == "Verdict":  # the old name of ``Classified``, which three classes shared (issue 31)
        warnings.warn("pytest_infer.structured.Verdict is deprecated: use Classified", DeprecationWarning, stacklevel=2)
        return _getattr("Classified")
    return _getattr(name)


__all__ = list(_NAMES)
