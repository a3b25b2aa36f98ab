"""The one place that measures: a streaming load client and the load patterns that drive it."""

from __future__ import annotations

from .distributed import DistributedRun, ProcessFigures, run_load_distributed
from .patterns import LoadRun, LoadSpec, Workload, run_load, run_load_async
from .trace import RequestTrace

__all__ = [
    "DistributedRun",
    "LoadRun",
    "LoadSpec",
    "ProcessFigures",
    "RequestTrace",
    "Workload",
    "run_load",
    "run_load_async",
    "run_load_distributed",
]
