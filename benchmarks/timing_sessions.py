"""Timing across sessions on this machine: calibrate the drift from same-version sessions, then judge A/A and
slowed candidates measured in sessions of their own, and the same in turns (interleaved), as the gate would.

The sessions are plain runs of the SLO suite (benchmarks/README.md "Timing across sessions" has the commands);
this reads their results (``DIR/NAME/results.json`` or ``DIR/NAME.json``) and writes one JSON summary.

    python benchmarks/timing_sessions.py benchmarks/results/timing-sessions \\
        --calibrate cal1,cal2,cal3,cal4,cal5 --baseline base \\
        --aa aa1,aa2,aa3,aa4,aa5 --slow slow1,slow2,slow3,ttft400 --interleaved inter-aa,inter-slow,inter-slow-0.3ms \\
        -o benchmarks/results/timing_sessions.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_infer.gating.compare import compare
from pytest_infer.results.model import SessionResults, atomic_write_text
from pytest_infer.slo.drift import Drift, DriftCalibration, calibrate
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings

RULES = "output_tps:5%,ttft_p50:10%,tpot_p50:10%"
SHOWN = (
    "output_tokens_per_s",
    "ttft_p50_ms",
    "tpot_p50_ms",
    "itl_p50_ms",
    "e2e_p50_ms",
    "tpot_p5_ms",
    "tpot_p10_ms",
    "itl_p5_ms",
    "itl_p10_ms",
    "itl_token_p5_ms",
    "itl_token_p10_ms",
)


def no_drift(drift: DriftCalibration) -> DriftCalibration:
    """The gate before drift was known: every figure's drift taken as 0, so the runs' Mann-Whitney test alone
    decides."""
    return DriftCalibration(
        {k: {m: Drift(0.0, 0.0, d.sessions) for m, d in ms.items()} for k, ms in drift.figures.items()},
        drift.sessions,
        1.0,
        "none",
    )


def in_turns(results: SessionResults, rules) -> Any:
    """The gate on one session that measured ``baseline`` and ``candidate`` in turns (``--slo-interleave``)."""
    return compare(results, results, gate_settings(rules), pairs={"baseline": "candidate"}, exclusive=True)


def judged(gate) -> dict[str, Any]:
    return {
        "verdict": gate.verdict,
        "timing": gate.timing,
        "findings": [f.line() for f in gate.findings if f.area == "slo"],
    }


def moves(
    figures: dict[str, dict[str, float]],
    drift: DriftCalibration,
    calibration: list[str],
    baseline: str,
    aa: list[str],
    slow: list[str],
) -> dict[str, Any]:
    """Per shown figure: the calibration sessions' values, its calibrated bound, and each A/A and slowed session's
    change against the baseline session (percent, + is a rise), to see which figure tells a slowdown from drift."""
    bounds = {str(f): d.bound_pct for ms in drift.figures.values() for f, d in ms.items()}
    out: dict[str, Any] = {}
    for figure in SHOWN:
        base = figures[baseline].get(figure)
        if not base:
            continue
        change = lambda n: round((figures[n][figure] / base - 1) * 100, 1)  # noqa: B023, E731
        out[figure] = {
            "calibration": [figures[n].get(figure) for n in calibration],
            "bound_pct": bounds.get(figure),
            "baseline": base,
            "aa_pct": [change(n) for n in aa],
            "slow_pct": [change(n) for n in slow],
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    for name in ("calibrate", "aa", "slow", "interleaved"):
        parser.add_argument(f"--{name}", default="")
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--fail-on", default=RULES)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    rules = parse_rules(args.fail_on)

    def read(name: str) -> SessionResults:  # a session's report folder, or its results stored as NAME.json
        folder = args.folder / name / "results.json"
        return SessionResults.read(folder if folder.exists() else args.folder / f"{name}.json")

    names = lambda text: [n for n in text.split(",") if n]  # noqa: E731
    sessions = {n: read(n) for n in [*names(args.calibrate), args.baseline, *names(args.aa), *names(args.slow)]}
    drift = calibrate([(n, sessions[n]) for n in names(args.calibrate)])
    figures = {
        n: {str(m): round(v, 3) for p in r.table("slo").points() for m, v in p.metrics.items() if str(m) in SHOWN}
        for n, r in sessions.items()
    }
    out: dict[str, Any] = {
        "rules": args.fail_on,
        "calibration": drift.to_dict(),
        "figures": figures,
        "across_sessions": {},
        "interleaved": {},
    }
    out["moves"] = moves(figures, drift, names(args.calibrate), args.baseline, names(args.aa), names(args.slow))
    baseline = sessions[args.baseline]
    for name in [*names(args.aa), *names(args.slow)]:
        candidate = sessions[name]
        out["across_sessions"][name] = {
            "no calibration": judged(compare(baseline, candidate, gate_settings(rules))),
            "calibrated": judged(compare(baseline, candidate, gate_settings(rules, drift))),
            "mann-whitney alone (the gate before)": judged(
                compare(baseline, candidate, gate_settings(rules, no_drift(drift)))
            ),
        }
    for name in names(args.interleaved):
        results = read(name)
        out["interleaved"][name] = judged(in_turns(results, rules))
        out["figures"][name] = {
            p.target: {str(m): round(v, 3) for m, v in p.metrics.items() if str(m) in SHOWN}
            for p in results.table("slo").points()
        }
    atomic_write_text(args.output, json.dumps(out, indent=1) + "\n")
    for figure, m in out["moves"].items():
        print(f"{figure}: calibration {m['calibration']} bound {m['bound_pct']}%", end=" | ")
        print(f"A/A {m['aa_pct']} | slowed {m['slow_pct']}")
    for name, modes in out["across_sessions"].items():
        print(name, " | ".join(f"{mode}: {r['verdict']}" for mode, r in modes.items()))
    for name, r in out["interleaved"].items():
        print(name, "interleaved:", r["verdict"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
