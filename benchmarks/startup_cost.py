"""What having a plugin installed costs a pytest run that does not use it, side by side with pytest-xdist and
pytest-benchmark, in one run: the whole start-up (import, options, configure, collection, finish), not the import
alone (benchmarks/import_cost.py).

Each round runs ``python -m pytest -q`` on a one-test project in a fresh temporary folder once with every installed
plugin and once without each of the three (``-p no:NAME``; without pytest-infer's ``infer`` its suites go too), in a
shuffled order. A plugin's cost is, per round, the run with everything minus the run without it; medians over the
rounds, since a shared machine is noisy.

    python benchmarks/startup_cost.py [--rounds 15] [--json benchmarks/results/startup_cost.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGINS = {"pytest-infer": "infer", "pytest-xdist": "xdist", "pytest-benchmark": "benchmark"}


def run_ms(project: Path, disabled: str | None) -> float:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_one.py"]
    if disabled:
        args += ["-p", f"no:{disabled}"]
    start = time.perf_counter()
    subprocess.run(args, cwd=project, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "test_one.py").write_text("def test_one():\n    assert True\n")
        run_ms(project, None)  # bytecode caches written once, outside the rounds
        costs: dict[str, list[float]] = {name: [] for name in PLUGINS}
        everything: list[float] = []
        for _ in range(args.rounds):
            variants = [None, *PLUGINS.values()]
            times = {v: run_ms(project, v) for v in random.sample(variants, len(variants))}
            everything.append(times[None])
            for name, option in PLUGINS.items():
                costs[name].append(times[None] - times[option])
    rows = {
        name: {
            "median_cost_ms": round(statistics.median(c), 1),
            "rounds": len(c),
            "samples_ms": [round(x, 1) for x in c],
        }
        for name, c in costs.items()
    }
    print(
        f"a one-test pytest run with every plugin: median {statistics.median(everything):.0f} ms ({args.rounds} rounds)"
    )
    print("| plugin | median start-up cost (ms) | ratio to pytest-benchmark |")
    print("|---|---|---|")
    bench = rows["pytest-benchmark"]["median_cost_ms"] or 1.0
    for name, row in rows.items():
        print(f"| {name} | {row['median_cost_ms']} | {row['median_cost_ms'] / bench:.2f}x |")
    if args.json:
        payload = {"median_run_with_every_plugin_ms": round(statistics.median(everything), 1), "plugins": rows}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
