"""The capacity search against a manual sweep of fixed rates, on one running server, in one session.

    python benchmarks/capacity_sweep.py --base-url http://127.0.0.1:18000 --model tiny --rates 4 8 16 24 32 48 64

Both use the ``capacity`` load point of the ``cpu`` profile (its thresholds and request count):
the search as the suite runs it, then every listed rate as a plain Poisson load point judged on
the same thresholds. The search agrees when its capacity is within one step of the highest
rate of the sweep that passed (a "step": the sweep's spacing around that rate, or the search's
own bracket). Sweep first or search first alternates with ``--order``, since the box drifts.
Results: a table on stdout and ``--output`` JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pytest_infer.adapters import registry
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.slo.metrics import ValidityRules
from pytest_infer.slo.profiles import LoadPoint, load_profile
from pytest_infer.slo.profiles.capacity import evaluate_capacity, judge_probe, probe_point, search_settings
from pytest_infer.slo.profiles.evaluate import evaluate_point


def row(value: float, status: str, reason: str, result) -> dict:
    figures = result.figures()
    return {
        "rate": value,
        "status": status,
        "reason": reason[:160],
        **{k: figures.get(k) for k in ("requests_per_s", *result.point.thresholds)},
    }


def sweep(point: LoadPoint, rates: list[float], measure) -> list[dict]:
    settings = search_settings(point)
    rows = []
    for rate in rates:
        result = measure(probe_point(point, "rate", rate))
        status, reason = judge_probe(result, settings)
        rows.append(row(rate, status, reason, result))
        print(f"  sweep {rate:g}/s: {status} {reason[:100]}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--framework", default="vllm")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--point", default="capacity")
    parser.add_argument("--rates", type=float, nargs="+", default=[4, 8, 16, 24, 32, 48, 64])
    parser.add_argument("--order", choices=("search-first", "sweep-first"), default="search-first")
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/capacity_vllm.json"))
    args = parser.parse_args()
    profile = load_profile(args.profile)
    point = next(p for p in profile.load_points(args.model, args.framework) if p.id == args.point)
    endpoint = Endpoint(args.base_url, args.model, timeout=point.timeout_s or 60)

    rules = ValidityRules.from_dict(profile.validity)  # as the suite judges validity
    adapter = registry.get(args.framework)

    def measure(probe: LoadPoint):
        return evaluate_point(probe, endpoint, adapter=adapter, rules=rules)

    began = time.monotonic()
    found, manual = None, []
    for step in ("search", "sweep") if args.order == "search-first" else ("sweep", "search"):
        t0 = time.monotonic()
        if step == "search":
            found = evaluate_capacity(point, measure)
            print(found.table(), flush=True)
            search_s = time.monotonic() - t0
        else:
            manual = sweep(point, args.rates, measure)
            sweep_s = time.monotonic() - t0
    assert found is not None
    passed = [r["rate"] for r in manual if r["status"] == "pass"]
    best = max(passed) if passed else None
    judged = [r["rate"] for r in manual if r["status"] != "invalid"]  # an invalid rate says nothing either way
    above = min((r for r in judged if best is not None and r > best), default=None)
    below = max((r for r in judged if best is not None and r < best), default=None)
    cap = found.capacity.value
    # one step: the sweep's spacing on the side the search landed
    agrees = cap is not None and best is not None and (below or 0) <= cap <= (above or float("inf"))
    report = {
        "point": {"id": point.id, "settings": point.settings, "thresholds": point.thresholds},
        "search": {**found.capacity.to_dict(), "verdict": found.verdict.status, "seconds": round(search_s, 1)},
        "sweep": {"rows": manual, "highest_pass": best, "seconds": round(sweep_s, 1)},
        "agrees_within_one_step": agrees,
        "minutes": round((time.monotonic() - began) / 60, 1),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nsearch: capacity {found.capacity.describe()} ({len(found.capacity.probes)} probes, {search_s:.0f} s)")
    print(f"sweep: highest passing rate {best} of {args.rates} ({sweep_s:.0f} s)")
    print(f"within one step: {agrees} -> {args.output}")


if __name__ == "__main__":
    main()
