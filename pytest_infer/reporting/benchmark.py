"""The SLO figures in pytest-benchmark's JSON format, for ``pytest-benchmark compare`` and CI benchmark trackers.

pytest-benchmark stores times in seconds, lower is better, and derives ``ops``
(per second, higher is better) from them; trackers such as
github-action-benchmark read ``stats.ops``. So each figure becomes one
benchmark whose rounds are the repeated runs: latencies converted to seconds,
and throughput-like figures stored as their reciprocal (seconds per token or
per request), so that their ``ops`` is the throughput itself. ``extra_info``
keeps the figure as measured, with its unit.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..gating.rules import higher_is_better
from ..results.model import SessionResults, atomic_write_text
from ..results.views import slo_points, target_label

UNIT_SECONDS = {"ms": 1e-3, "us": 1e-6, "s": 1.0}


def as_seconds(metric: str, value: float) -> float | None:
    """A figure as a pytest-benchmark time (lower is better); ``None`` when it cannot be one."""
    if higher_is_better(metric):
        return 1.0 / value if value > 0 else None
    unit = metric.rsplit("_", 1)[-1]
    return value * UNIT_SECONDS[unit] if unit in UNIT_SECONDS else None


def _stats(data: list[float]) -> dict[str, Any]:
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for value in data:
        stats.update(value)
    out = stats.as_dict()
    out["iterations"] = 1
    out["data"] = data
    return out


def to_benchmark_json(results: SessionResults) -> dict[str, Any]:
    env = results.environment
    git = env.get("git", {})
    benchmarks = []
    for point in slo_points(results):
        target = results.targets.get(point.target)
        label = target_label(target) if target else point.target
        for metric, runs in point.runs.items():
            data = [s for s in (as_seconds(metric, v) for v in runs) if s is not None]
            if not data:
                continue
            benchmarks.append({
                "group": f"{point.key} {metric}",
                "name": f"{metric}[{label}]",
                "fullname": f"slo/{point.key}::{metric}[{label}]",
                "params": {"target": label, "load_point": point.key},
                "param": label,
                "extra_info": {"metric": metric, "value": point.metrics[metric], "runs": runs, "verdict": point.verdict,
                               "stored_as": "reciprocal seconds (ops = the figure)" if higher_is_better(metric) else "seconds"},
                "options": {"disable_gc": False, "timer": "pytest-infer", "min_rounds": 1, "max_time": 0, "min_time": 0, "warmup": False},
                "stats": _stats(data),
            })
    cpu = env.get("cpu", {})
    return {
        "machine_info": {
            "node": env.get("host", ""),
            "processor": cpu.get("model") or "",
            "machine": cpu.get("arch") or "",
            "python_implementation": env.get("implementation", ""),
            "python_version": env.get("python", ""),
            "system": env.get("os", {}).get("system", ""),
            "release": env.get("os", {}).get("release", ""),
            "cpu": {"brand_raw": cpu.get("model") or "", "count": cpu.get("count")},
            "gpu": env.get("gpu", {}),
            "pytest_infer": results.plugin_version or __version__,
        },
        "commit_info": {"id": git.get("commit"), "dirty": git.get("dirty"), "branch": git.get("branch"), "describe": git.get("describe")},
        "benchmarks": benchmarks,
        "datetime": datetime.now(timezone.utc).isoformat(),
        "version": _benchmark_version(),
    }


def _benchmark_version() -> str:
    from importlib.metadata import version

    return version("pytest-benchmark")


def write_benchmark_json(results: SessionResults, path: Path) -> Path:
    atomic_write_text(path, json.dumps(to_benchmark_json(results), indent=1) + "\n")
    return path
