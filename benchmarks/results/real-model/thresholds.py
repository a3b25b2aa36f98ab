"""The gemma-3-270m entry of slo/cpu.yaml, derived from measured runs.

    python thresholds.py extract RUN_NAME results.json [...] >> slo-figures.jsonl   # keep the figures, compactly
    python thresholds.py derive slo-figures.jsonl                                  # the thresholds, as YAML

The rule: for each engine and load point, the worst figure over the stored runs times MARGIN (latency) or divided by
it (throughput), rounded outward to two significant digits (the profile adds: no error, at most 16 GB of memory).
A shared 2-core machine moves single figures by 2-3x between runs (slo/cpu.yaml's notes), so this catches
order-of-magnitude regressions and broken streaming, not percent-level drift (the upgrade gate's job).
"""

from __future__ import annotations

import json
import math
import sys

MARGIN = 3.0
LATENCY = ("ttft_p50_ms", "ttft_p90_ms", "tpot_p90_ms", "e2e_p90_ms")
KEPT = (*LATENCY, "output_tokens_per_s", "requests", "error_share", "peak_rss_gb")


def extract(run: str, paths: list[str]) -> None:
    """One line per (engine, load point) of each results.json: the figures the thresholds are set from."""
    for path in paths:
        with open(path) as fh:
            data = json.load(fh)
        for entry in data.get("slo", []):
            metrics = entry.get("metrics", {})
            line = {
                "run": run,
                "framework": entry.get("framework"),
                "version": entry.get("version"),
                "load_point": entry.get("load_point"),
                "verdict": entry.get("verdict"),
                **{k: round(metrics[k], 2) for k in KEPT if isinstance(metrics.get(k), (int, float))},
            }
            print(json.dumps(line))


def _outward(value: float, up: bool) -> float:
    """``value`` rounded away from the measured side to two significant digits."""
    scale = 10 ** (math.floor(math.log10(value)) - 1)
    return round((math.ceil if up else math.floor)(value / scale) * scale, 6)


def derive(path: str) -> dict[tuple[str, str], dict[str, float]]:
    """(engine, load point) -> its limits, from the figures in ``path``."""
    worst: dict[tuple[str, str], dict[str, float]] = {}
    with open(path) as fh:
        for line in map(json.loads, filter(str.strip, fh)):
            seen = worst.setdefault((line["framework"], line["load_point"]), {})
            for key in LATENCY:
                if key in line:
                    seen[key] = max(seen.get(key, 0.0), line[key])
            if "output_tokens_per_s" in line:
                seen["tps"] = min(seen.get("tps", math.inf), line["output_tokens_per_s"])
    limits = {}
    for key, seen in sorted(worst.items()):
        limits[key] = {k: _outward(v * MARGIN, True) for k, v in seen.items() if k in LATENCY}
        if "tps" in seen:
            limits[key]["min_output_tokens_per_s"] = _outward(seen["tps"] / MARGIN, False)
    return limits


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "extract":
        extract(args[0], args[1:])
    else:
        for (framework, point), limits in derive(args[0]).items():
            text = ", ".join(f"{k}: {int(v) if float(v).is_integer() else v}" for k, v in limits.items())
            print(f"{framework} {point}: {{{text}}}")
