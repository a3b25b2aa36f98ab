"""Structured output under constrained decoding: schema strategies, outcome classes, runs, reproducers.

Public API for users' own tests: ``schemas`` (a Hypothesis strategy of valid,
satisfiable JSON Schemas), ``classify_output`` and ``Outcome``, and
``StructuredRunner`` to send a schema to a server and get a classified ``Attempt``.
"""
from __future__ import annotations

from .outcome import FAILURES, MATRIX_CLASSES, Outcome, Verdict, classify_output, is_json_prefix, strict_loads, validate
from .runner import Attempt, RequestPath, Sampling, StructuredRunner, paths_for
from .strategies import KEYWORDS, keywords_of, schemas, schemas_with_instances, token_budget

__all__ = [
    "FAILURES", "KEYWORDS", "MATRIX_CLASSES", "Attempt", "Outcome", "RequestPath", "Sampling", "StructuredRunner", "Verdict",
    "classify_output", "is_json_prefix", "keywords_of", "paths_for", "schemas", "schemas_with_instances", "strict_loads",
    "token_budget", "validate",
]  # fmt: skip
