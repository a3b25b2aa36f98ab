"""Merge sessions of ``scripts/real-model.sh matrix`` into one report: each test from the latest session that ran it
on that engine (a test not run, its server given up, replaces nothing), and each engine's suite table from the
latest session that ran at least as many of its tests, so a suite stopped part-way in one session and run whole in a
later one counts once, and a later session of a few checks replaces just those (``pytest-infer report`` over the raw
files would keep every run of a test, worst first).

    python benchmarks/results/real-model/merge_parts.py OUT_DIR OLDEST/results.json ... NEWEST/results.json

writes the report (``summary.md``, ``report.html``, ``results.json``) and ``matrix-counts.json`` (outcomes per engine
and suite, each engine's server deaths) to OUT_DIR, and names the sessions each engine's suite came from.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def suite_of(test: dict) -> str:
    """A test's suite, or the folder under suites/ of one no suite owns (smoke)."""
    return test["suite"] or test["nodeid"].split("/")[1]


def ran(part: dict) -> Counter[tuple[str, str]]:
    """How many tests of each (engine, suite) a session ran (a test whose server was given up did not run)."""
    return Counter(
        (test["target"], suite_of(test)) for test in part["tests"] if test["outcome"] != "not_run"
    )


def without(part: dict, later: list[dict]) -> dict:
    """The session less what later ones ran again: each test they have, and each engine's suite table where one of
    them ran at least as many of that suite's tests."""
    rerun = {
        (t["target"], t["nodeid"]) for p in later for t in p["tests"] if t["outcome"] != "not_run"
    }
    mine = ran(part)
    superseded = {pair for p in later for pair, n in ran(p).items() if n >= mine[pair]}
    kept = dict(part, tests=[t for t in part["tests"] if (t["target"], t["nodeid"]) not in rerun])
    for target, suite in superseded:
        table = kept.get(suite)
        if isinstance(table, dict):
            kept[suite] = {key: value for key, value in table.items() if key != target}
        elif isinstance(table, list):
            kept[suite] = [
                entry
                for entry in table
                if not (isinstance(entry, dict) and entry.get("target") == target)
            ]
    return kept


def counts(results: dict) -> dict:
    by_target: dict[str, dict[str, Counter[str]]] = {}
    for test in results["tests"]:
        by_target.setdefault(test["target"], {}).setdefault(suite_of(test), Counter())[
            test["outcome"]
        ] += 1
    return {
        "counts": {
            t: {s: dict(sorted(c.items())) for s, c in sorted(suites.items())}
            for t, suites in by_target.items()
        },
        "targets": {
            tid: {
                "framework": t["framework"],
                "version": t["version"],
                "model": Path(t["model"]).name if t["model"].startswith("/") else t["model"],
                "crashes": len(t.get("crashes") or []),
            }
            for tid, t in results["targets"].items()
        },
    }


def main(out: Path, sources: list[Path]) -> None:
    parts = [json.loads(source.read_text()) for source in sources]
    origin: dict[tuple[str, str], set[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, part in enumerate(parts):
            kept = without(part, parts[i + 1 :])
            for pair in ran(kept):
                origin.setdefault(pair, set()).add(str(sources[i]))
            files.append(Path(tmp) / f"part{i}.json")
            files[-1].write_text(json.dumps(kept))
        out.mkdir(parents=True, exist_ok=True)
        cli = [sys.executable, "-m", "pytest_infer.cli"]
        subprocess.run(
            [*cli, "merge", *map(str, files), "-o", str(out / "results.json")], check=True
        )
    subprocess.run(
        [*cli, "report", str(out / "results.json"), "-o", str(out), "--no-step-summary"], check=True
    )
    merged = json.loads((out / "results.json").read_text())
    (out / "matrix-counts.json").write_text(
        json.dumps(counts(merged), indent=1, sort_keys=True) + "\n"
    )
    for (target, suite), names in sorted(origin.items()):
        print(f"{target} {suite}: {', '.join(sorted(names))}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
