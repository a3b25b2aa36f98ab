"""Structured output under constrained decoding: schema strategies, answer classes, runs,
reproducers.

Public API for users' own tests: ``schemas`` (a Hypothesis strategy of valid,
satisfiable JSON Schemas), ``classify_output`` and ``AnswerClass``, and
``StructuredRunner`` to send a schema to a server and get a classified ``Attempt``.
"""

from __future__ import annotations

import warnings
from typing import Any

from .._lazy import exports

_NAMES = {
    "AnswerClass": "classify",
    "Classified": "classify",
    "FAILURES": "classify",
    "MATRIX_CLASSES": "classify",
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


# Old names, importable for one release with a warning, and the names they became.
_OLD_NAMES = {
    "Verdict": "Classified",  # three classes shared it (issue 31)
    "Outcome": "AnswerClass",  # ``pytest_infer.outcomes.Outcome`` is a test's outcome (issue 54)
}


def __getattr__(name: str) -> Any:
    if new := _OLD_NAMES.get(name):
        warnings.warn(
            f"pytest_infer.structured.{name} is deprecated: use {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return _getattr(new)
    return _getattr(name)


__all__ = list(_NAMES)
