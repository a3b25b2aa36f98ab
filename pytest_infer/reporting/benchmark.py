"""The suites' measured figures in pytest-benchmark's JSON format, for ``pytest-benchmark compare``
and CI benchmark trackers.

pytest-benchmark stores times in seconds, lower is better, and derives ``ops``
(per second, higher is better) from them; trackers such as
github-action-benchmark read ``stats.ops``. So each series a table gives
(``Table.benchmarks``) becomes one benchmark whose rounds are its runs as
times: the table converts them (a latency to seconds, a throughput to its
reciprocal, so that its ``ops`` is the throughput itself) and says how in
``stored_as``. ``extra_info`` keeps the figure as measured.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pytest_benchmark.stats import Stats

from .. import __version__
from ..results.model import SessionResults, atomic_write_text
from ..results.views import Views, build_views
from ..table import Measured


def _stats(data: list[float]) -> dict[str, Any]:
    stats = Stats()
    for value in data:
        stats.update(value)
    out = stats.as_dict()
    out["iterations"] = 1
    out["data"] = data
    return out


def to_benchmark_json(results: SessionResults, views: Views | None = None) -> dict[str, Any]:
    views = views or build_views(results)
    env = results.environment
    git = env.get("git", {})
    benchmarks = []
    for name, table in results.tables.items():
        for series in table.benchmarks() if isinstance(table, Measured) else ():
            metric, runs, label = series["metric"], series["runs"], views.label(series["target"])
            data = series["seconds"]
            if not data:
                continue
            benchmarks.append(
                {
                    "group": series["group"],
                    "name": f"{metric}[{label}]",
                    "fullname": f"{name}/{series['key']}::{metric}[{label}]",
                    "params": {"target": label, "load_point": series["key"]},
                    "param": label,
                    "extra_info": {
                        "metric": metric,
                        "value": series["value"],
                        "runs": runs,
                        "verdict": series["verdict"],
                        "stored_as": series["stored_as"],
                    },
                    "options": {
                        "disable_gc": False,
                        "timer": "pytest-infer",
                        "min_rounds": 1,
                        "max_time": 0,
                        "min_time": 0,
                        "warmup": False,
                    },
                    "stats": _stats(data),
                }
            )
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
        "commit_info": {
            "id": git.get("commit"),
            "dirty": git.get("dirty"),
            "branch": git.get("branch"),
            "describe": git.get("describe"),
        },
        "benchmarks": benchmarks,
        "datetime": datetime.now(UTC).isoformat(),
        "version": _benchmark_version(),
    }


def _benchmark_version() -> str:
    return version("pytest-benchmark")


def write_benchmark_json(results: SessionResults, path: Path, views: Views | None = None) -> Path:
    atomic_write_text(path, json.dumps(to_benchmark_json(results, views), indent=1) + "\n")
    return path
