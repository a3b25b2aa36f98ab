"""What loading pytest-infer's plugin module costs a pytest run that does not use it, side by side
with pytest-xdist's and pytest-benchmark's plugin modules, in one run.

Each round imports every module once in a fresh interpreter (``python -X importtime``), in a
shuffled order, and reads the cumulative microseconds of the module itself and of pytest (which
every plugin imports, so it is reported apart). Medians over the rounds; the plugin's own share
is its cumulative time minus pytest's in the same interpreter.

    python benchmarks/import_cost.py [--rounds 15] [--json benchmarks/results/import_cost.json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path


def suite_modules() -> tuple[str, ...]:
    """Every installed suite's definition and plugin modules: what pytest-infer's plugin loads at start-up."""
    suites = entry_points(group="pytest_infer.suites")
    return tuple(m for ep in suites for m in (ep.module, ep.load().plugin) if m)


SUITE_PLUGINS = suite_modules()
# what pytest loads for each: pytest-infer's plugin module registers its installed suites' plugins at start-up
MODULES = {
    "pytest-infer": ("pytest_infer.plugin",),
    "pytest-infer with its suites": ("pytest_infer.plugin", *SUITE_PLUGINS),
    "pytest-xdist": ("xdist.plugin",),
    "pytest-benchmark": ("pytest_benchmark.plugin",),
}
LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)")


def cumulative_us(modules: tuple[str, ...]) -> tuple[int, int]:
    """(cumulative µs of ``modules``, imported in order, and of the top-level ``pytest`` import) in a fresh
    interpreter."""
    code = "; ".join(f"import {m}" for m in modules)
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    ).stderr
    times = {}
    for cumulative, indent, name in LINE.findall(out):
        top = len(indent) == 1  # a module another one imported first is inside that one's cumulative time
        if (name == "pytest" or (name in modules and top)) and name not in times:
            times[name] = int(cumulative)
    return sum(times.get(m, 0) for m in modules), times.get("pytest", 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    samples: dict[str, list[tuple[int, int]]] = {name: [] for name in MODULES}
    for _ in range(args.rounds):
        for name in random.sample(list(MODULES), len(MODULES)):
            samples[name].append(cumulative_us(MODULES[name]))
    rows = {}
    for name, pairs in samples.items():
        total = statistics.median(t for t, _ in pairs) / 1000
        own = statistics.median(t - p for t, p in pairs) / 1000
        rows[name] = {
            "module": " + ".join(MODULES[name]),
            "median_ms": round(total, 1),
            "median_without_pytest_ms": round(own, 1),
            "rounds": len(pairs),
        }
    base = rows["pytest-xdist"]["median_without_pytest_ms"] or 1.0
    print("| plugin | median import (ms) | without pytest (ms) | ratio to pytest-xdist (without pytest) |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['median_ms']} | {row['median_without_pytest_ms']} |"
            f" {row['median_without_pytest_ms'] / base:.1f}x |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
