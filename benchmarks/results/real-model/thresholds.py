"""The gemma-3-270m limits of slo/cpu.yaml, derived from measured runs.

    python thresholds.py extract RUN_NAME results.json [...] >> slo-figures.jsonl   # keep the figures, compactly
    python thresholds.py derive slo-figures.jsonl                                  # the limits, and who has none

The rule (also in docs/performance-slos.md):

- A run counts only if it is a valid measurement with no error: its verdict is not ``invalid`` (the client may
  have set the pace) and its ``error_share`` is 0. A run with errors measured a server that failed requests: its
  latencies and throughput are not the engine's, and a limit set from them would pass a broken server.
- An engine gets limits at a load point only from at least MIN_RUNS such runs there. One run is one draw of a
  shared machine's speed; with fewer, the engine gets no limits at that point, and the profile's test says
  "no limits set for <engine> on this profile" (not exercised), never another engine's limits.
- Each limit is the median of those runs times MARGIN (latency: TTFT p50/p90, TPOT p90, end-to-end p90), or
  divided by it (output tokens/s), rounded outward to two significant digits. MARGIN is 1.5 because the stored
  drift studies on this 2-core machine bound the same server's session-to-session drift at 10% on a quiet run and
  43% on the next (benchmarks/README.md, "Timing across sessions"): x1.5 passes that drift, and an engine twice as
  slow as its median fails every latency and throughput limit (2 > 1.5 even after the outward rounding, at most
  x1.1). Under heavy load the same study saw 132%: a run on a busy machine can fail, which a rerun on a quiet one
  tells apart; these limits catch an engine that got twice as slow, not percent-level drift (the upgrade gate's
  job, measured in turns).

The profile adds what holds for every engine: no error, at most 16 GB of memory.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MARGIN = 1.5
MIN_RUNS = 3
LATENCY = ("ttft_p50_ms", "ttft_p90_ms", "tpot_p90_ms", "e2e_p90_ms")
THROUGHPUT = "output_tokens_per_s"
KEPT = (*LATENCY, THROUGHPUT, "requests", "error_share", "peak_rss_gb")


def extract(run: str, paths: list[str]) -> None:
    """One line per (engine, load point) of each results.json, and per run of a point measured several times
    (``--slo-repeat``, named RUN#1, RUN#2, ...; the point's verdict applies to each): the figures limits are set from.
    """
    for path in paths:
        with open(path) as fh:
            data = json.load(fh)
        for entry in data.get("slo", []):
            runs = (
                [r.get("metrics", r) for r in entry["runs"]]
                if entry.get("runs")
                else [entry.get("metrics", {})]
            )
            for i, metrics in enumerate(runs, 1):
                line = {
                    "run": run if len(runs) == 1 else f"{run}#{i}",
                    "framework": entry.get("framework"),
                    "version": entry.get("version"),
                    "load_point": entry.get("load_point"),
                    "verdict": entry.get("verdict"),
                    **{
                        k: round(metrics[k], 2)
                        for k in KEPT
                        if isinstance(metrics.get(k), (int, float))
                    },
                }
                print(json.dumps(line))


def refused(run: Mapping[str, Any]) -> str | None:
    """Why a stored run cannot set limits, or None when it can."""
    if run.get("verdict") == "invalid":
        return "marked invalid"
    share = run.get("error_share")
    if not isinstance(share, (int, float)):
        return "no error share recorded"
    if share > 0:
        return f"{share:.0%} of its requests in error"
    return None


def _outward(value: float, up: bool) -> float:
    """``value`` rounded away from the measured side to two significant digits."""
    scale = 10 ** (math.floor(math.log10(value)) - 1)
    return round((math.ceil if up else math.floor)(value / scale) * scale, 6)


@dataclass
class Derived:
    """(engine, load point) -> its limits; and for each that has none, why."""

    limits: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    without: dict[tuple[str, str], str] = field(default_factory=dict)
    runs: dict[tuple[str, str], int] = field(default_factory=dict)  # the runs each limit came from


def derive_runs(lines: Iterable[Mapping[str, Any]]) -> Derived:
    """The limits the rule (module docstring) sets from stored runs, one mapping per run."""
    kept: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    refusals: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in lines:
        key = (line["framework"], line["load_point"])
        if (why := refused(line)) is None:
            kept[key].append(line)
        else:
            refusals[key].append(f"{line.get('run', '?')}: {why}")
    derived = Derived()
    for key in sorted(set(kept) | set(refusals)):
        runs = kept.get(key, [])
        if len(runs) < MIN_RUNS:
            refused_runs = f" (refused: {'; '.join(refusals[key])})" if refusals.get(key) else ""
            derived.without[key] = (
                f"{len(runs)} valid error-free runs of the {MIN_RUNS} needed{refused_runs}"
            )
            continue
        limits = {
            k: _outward(statistics.median(r[k] for r in runs) * MARGIN, True)
            for k in LATENCY
            if all(k in r for r in runs)
        }
        if all(THROUGHPUT in r for r in runs):
            limits["min_output_tokens_per_s"] = _outward(
                statistics.median(r[THROUGHPUT] for r in runs) / MARGIN, False
            )
        derived.limits[key] = limits
        derived.runs[key] = len(runs)
    return derived


def derive(path: str) -> Derived:
    """The limits from the figures stored in ``path`` (one JSON object a line)."""
    with open(path) as fh:
        return derive_runs(map(json.loads, filter(str.strip, fh)))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "extract":
        extract(args[0], args[1:])
    else:
        derived = derive(args[0])
        for (framework, point), limits in derived.limits.items():
            text = ", ".join(
                f"{k}: {int(v) if float(v).is_integer() else v}" for k, v in limits.items()
            )
            print(
                f"{framework} {point}: {{{text}}}  # median of {derived.runs[framework, point]} runs"
            )
        for (framework, point), why in derived.without.items():
            print(f"{framework} {point}: no limits set: {why}")
