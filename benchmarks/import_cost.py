"""What loading pytest-infer's plugin module costs a pytest run that does not use it, side by side
with pytest-xdist's and pytest-benchmark's plugin modules, in one run.

Each round imports every plugin twice, each time in a fresh interpreter (``python -X importtime``),
in a shuffled order:

- **in a pytest run**: after ``import pytest``, as pytest loads a plugin from its entry point, once
  its own modules (``typing``, ``json``, ``importlib.metadata`` ...) are loaded; the cost is every
  module the plugin's import brought in (what a pytest run pays for having it installed);
- **cold**: the plugin first, reading the cumulative microseconds of the module itself and of
  pytest (which every plugin imports); "without pytest" is the one minus the other, and charges the
  plugin with the standard modules it happens to import before pytest does.

Medians over the rounds.

    python benchmarks/import_cost.py [--rounds 15] [--json benchmarks/results/import_cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
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
# Bytecode caches on, and written before the first round: a pytest run imports cached bytecode, and an
# environment that sets PYTHONDONTWRITEBYTECODE (as some CI images do) would time compiling instead.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)")


def cumulative_us(modules: tuple[str, ...]) -> tuple[int, int]:
    """(cumulative µs of ``modules``, imported in order, and of the top-level ``pytest`` import) in a fresh
    interpreter."""
    code = "; ".join(f"import {m}" for m in modules)
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stderr
    times = {}
    for cumulative, indent, name in LINE.findall(out):
        top = (
            len(indent) == 1
        )  # a module another one imported first is inside that one's cumulative time
        if (name == "pytest" or (name in modules and top)) and name not in times:
            times[name] = int(cumulative)
    return sum(times.get(m, 0) for m in modules), times.get("pytest", 0)


def in_a_run_us(modules: tuple[str, ...]) -> int:
    """Cumulative µs of everything ``modules`` import in a fresh interpreter that imported pytest first."""
    code = "import pytest; " + "; ".join(f"import {m}" for m in modules)
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stderr
    lines = LINE.findall(out)
    after = (
        next(
            i for i, (_, indent, name) in enumerate(lines) if name == "pytest" and len(indent) == 1
        )
        + 1
    )
    return sum(int(cumulative) for cumulative, indent, _ in lines[after:] if len(indent) == 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    for name in MODULES:  # one untimed import each writes the caches every timed round reads
        cumulative_us(MODULES[name])
    samples: dict[str, list[tuple[int, int]]] = {name: [] for name in MODULES}
    in_run: dict[str, list[int]] = {name: [] for name in MODULES}
    for _ in range(args.rounds):
        for name, mode in random.sample(
            [(n, m) for n in MODULES for m in ("cold", "run")], 2 * len(MODULES)
        ):
            if mode == "cold":
                samples[name].append(cumulative_us(MODULES[name]))
            else:
                in_run[name].append(in_a_run_us(MODULES[name]))
    rows = {}
    for name, pairs in samples.items():
        total = statistics.median(t for t, _ in pairs) / 1000
        own = statistics.median(t - p for t, p in pairs) / 1000
        rows[name] = {
            "module": " + ".join(MODULES[name]),
            "in_a_pytest_run_ms": round(statistics.median(in_run[name]) / 1000, 1),
            "median_ms": round(total, 1),
            "median_without_pytest_ms": round(own, 1),
            "rounds": len(pairs),
        }
    bench = rows["pytest-benchmark"]
    print(
        "| plugin | in a pytest run (ms) | ratio to pytest-benchmark | cold, with pytest (ms) |"
        " cold, without pytest (ms) |"
    )
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['in_a_pytest_run_ms']} | {row['in_a_pytest_run_ms'] / bench['in_a_pytest_run_ms']:.2f}x |"
            f" {row['median_ms']} | {row['median_without_pytest_ms']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
