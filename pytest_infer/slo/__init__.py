"""SLOs: load points of a profile measured against a server, judged on thresholds, recorded as a
table.

Public API: ``SloTable`` and ``SloPoint`` (the results), ``slo_points`` (read entries as points),
``headline`` (the figures a summary shows).
"""

from __future__ import annotations

from .._lazy import exports

_NAMES = {"SloPoint": "table", "SloTable": "table", "headline": "table", "slo_points": "table"}
__getattr__, __dir__ = exports(__name__, _NAMES)
__all__ = list(_NAMES)
