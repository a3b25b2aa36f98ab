"""Consistency: does a request get, inside a busy batch, the answer it gets alone, with its own
parameters?

Public API for the bundled suite and users' own checks: sending alone and together (``send``,
``send_together``, ``Answer``), comparing two answers to one request (``compare``, ``Divergence``,
``Tally``), the mixed-parameter batch (``run_mix``, ``Mix``, ``CHECKS``), the corpus's schemas and
the tool parser's scripts under load (``structured_under_load``, ``tools_under_load``,
``judge_under_load``) and the suite's table.
"""

from __future__ import annotations

from .._lazy import exports

_NAMES = {
    "Answer": "kit",
    "send": "kit",
    "send_together": "kit",
    "compare": "kit",
    "Divergence": "kit",
    "Tally": "kit",
    "greedy": "kit",
    "filler": "kit",
    "PROMPTS": "kit",
    "TOP_K": "kit",
    "Mix": "mix",
    "run_mix": "mix",
    "CHECKS": "mix",
    "Verdict": "mix",
    "structured_under_load": "underload",
    "tools_under_load": "underload",
    "judge_under_load": "underload",
    "UnderLoad": "underload",
    "ConsistencyTable": "table",
}
__getattr__, __dir__ = exports(__name__, _NAMES)
__all__ = list(_NAMES)
