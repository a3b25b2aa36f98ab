"""Robustness: bad requests sent safely (deadline, read cap), answers classified and counted per
target.

Public API for the bundled suite and users' own abuse tests: ``BadRequest`` (one bad
request), ``Guard`` (sends it, checks the server still serves, counts), and the
helpers ``envelope_problem`` and ``reproducer``.
"""

from __future__ import annotations

from .._lazy import exports

_NAMES = {
    "Answer": "kit",
    "BadRequest": "kit",
    "Guard": "kit",
    "envelope_problem": "kit",
    "reproducer": "kit",
    "COUNTERS": "table",
    "RobustnessTable": "table",
}
__getattr__, __dir__ = exports(__name__, _NAMES)
__all__ = list(_NAMES)
