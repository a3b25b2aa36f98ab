"""What having a plugin installed costs a pytest run that does not use it, side by side with pytest-xdist and
pytest-benchmark, in one run: the whole start-up (import, options, configure, collection, finish), not the import
alone (benchmarks/import_cost.py).

Each round runs ``python -m pytest -q`` on a one-test project in a fresh temporary folder once with every installed
plugin and once without each of the three (``-p no:NAME``; without pytest-infer's ``infer`` its suites go too), in a
shuffled order. A plugin's cost is, per round, the run with everything minus the run without it, in CPU time (user +
system of the pytest process: what other processes on a shared machine disturb least) and in wall time; medians over
the rounds.

    python benchmarks/startup_cost.py [--rounds 15] [--json benchmarks/results/startup_cost.json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGINS = {"pytest-infer": "infer", "pytest-xdist": "xdist", "pytest-benchmark": "benchmark"}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ms(project: Path, disabled: str | None) -> tuple[float, float]:
    """(CPU ms, wall ms) of one pytest run."""
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "test_one.py",
    ]
    if disabled:
        args += ["-p", f"no:{disabled}"]
    cpu, start = _children_cpu_s(), time.perf_counter()
    subprocess.run(args, cwd=project, capture_output=True, check=True)
    return (_children_cpu_s() - cpu) * 1000, (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "test_one.py").write_text("def test_one():\n    assert True\n")
        run_ms(project, None)  # bytecode caches written once, outside the rounds
        cpu: dict[str, list[float]] = {name: [] for name in PLUGINS}
        wall: dict[str, list[float]] = {name: [] for name in PLUGINS}
        everything: list[tuple[float, float]] = []
        for _ in range(args.rounds):
            variants = [None, *PLUGINS.values()]
            times = {v: run_ms(project, v) for v in random.sample(variants, len(variants))}
            everything.append(times[None])
            for name, option in PLUGINS.items():
                cpu[name].append(times[None][0] - times[option][0])
                wall[name].append(times[None][1] - times[option][1])
    rows = {
        name: {
            "median_cpu_cost_ms": round(statistics.median(cpu[name]), 1),
            "median_wall_cost_ms": round(statistics.median(wall[name]), 1),
            "rounds": args.rounds,
            "cpu_samples_ms": [round(x, 1) for x in cpu[name]],
        }
        for name in PLUGINS
    }
    cpu_all = statistics.median(t[0] for t in everything)
    wall_all = statistics.median(t[1] for t in everything)
    print(
        f"one-test pytest run, every plugin: median {cpu_all:.0f} ms CPU, {wall_all:.0f} ms wall, {args.rounds} rounds"
    )
    print(
        "| plugin | median start-up cost, CPU (ms) | ratio to pytest-benchmark | median start-up cost, wall (ms) |"
    )
    print("|---|---|---|---|")
    bench = rows["pytest-benchmark"]["median_cpu_cost_ms"] or 1.0
    for name, row in rows.items():
        print(
            f"| {name} | {row['median_cpu_cost_ms']} | {row['median_cpu_cost_ms'] / bench:.2f}x |"
            f" {row['median_wall_cost_ms']} |"
        )
    if args.json:
        payload = {
            "run_with_every_plugin_ms": {"cpu": round(cpu_all, 1), "wall": round(wall_all, 1)},
            "plugins": rows,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
