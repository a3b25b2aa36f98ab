"""Structured output under constrained decoding: schema strategies, outcome classes, runs, reproducers.

Public API for users' own tests: ``schemas`` (a Hypothesis strategy of valid,
satisfiable JSON Schemas), ``classify_output`` and ``Outcome``, and
``StructuredRunner`` to send a schema to a server and get a classified ``Attempt``.
"""

from __future__ import annotations

from .._lazy import exports

_NAMES = {
    "FAILURES": "classify",
    "MATRIX_CLASSES": "classify",
    "Outcome": "classify",
    "Verdict": "classify",
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
__getattr__, __dir__ = exports(__name__, _NAMES)

__all__ = list(_NAMES)
