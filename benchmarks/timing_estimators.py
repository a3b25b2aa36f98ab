"""Would another per-session estimator make the stored timing studies' drift smaller? Recomputes each stored study
(``results/timing-sessions-*/run*``: sessions ``cal1``-``cal5``, ``base``, ``aa1``-``aa5``, ``slow1``-``slow3``) from
its sessions' per-run figures with three estimators of a session's figure: the median of its runs (what the gate
uses), its best run (``timeit``'s minimum: other processes only ever slow a run), and the mean of its two best.

For each estimator and figure: the calibrated bound as ``pytest-infer calibrate`` computes it (the largest move
between two calibration sessions, times ``--safety``), and how many A/A and slowed sessions move beyond the rule plus
that bound against ``base``. The gate's significance test is left out, so these counts are an upper bound of what it
fails.

    python benchmarks/timing_estimators.py [DIR ...] [--safety 1.5] [--rule 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
FIGURES = {"output_tokens_per_s": -1, "ttft_p50_ms": 1, "tpot_p50_ms": 1, "itl_p5_ms": 1}  # -1: higher is better


def _best(values: list[float], sign: int) -> float:
    return min(values) if sign > 0 else max(values)


def _best_two(values: list[float], sign: int) -> float:
    return statistics.fmean(sorted(values, reverse=sign < 0)[:2])


ESTIMATORS: dict[str, Callable[[list[float], int], float]] = {
    "median of runs": lambda values, sign: statistics.median(values),
    "best run": _best,
    "mean of the best two": _best_two,
}


def runs(study: Path, session: str) -> list[dict] | None:
    for path in (study / f"{session}.json", study / session / "results.json"):
        if path.exists():
            return json.loads(path.read_text())["slo"][0]["runs"]
    return None


def worse_pct(before: float, after: float, sign: int) -> float:
    """How much worse ``after`` is, as the rules measure it (a share of the better value)."""
    return (after / before - 1) * 100 if sign > 0 else (before / after - 1) * 100


def judge(study: Path, estimator: Callable[[list[float], int], float], figure: str, safety: float, rule: float):
    sign = FIGURES[figure]

    def value(session: str) -> float | None:
        found = runs(study, session)
        values = [r[figure] for r in found or () if r.get(figure) is not None]
        return estimator(values, sign) if values else None

    calibration = [value(f"cal{i}") for i in range(1, 6)]
    base = value("base")
    if base is None or any(v is None for v in calibration):
        return None
    bound = max(worse_pct(a, b, sign) for a in calibration for b in calibration) * safety  # type: ignore[arg-type]
    moves = {
        kind: [worse_pct(base, v, sign) for i in range(1, 6) if (v := value(f"{kind}{i}")) is not None]
        for kind in ("aa", "slow")
    }
    return bound, {kind: sum(m > rule + bound for m in found) for kind, found in moves.items()}, moves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("studies", nargs="*", type=Path)
    parser.add_argument("--safety", type=float, default=1.5)
    parser.add_argument("--rule", type=float, default=5.0, help="the rule's percent, for every figure")
    args = parser.parse_args(argv)
    studies = args.studies or sorted(RESULTS.glob("timing-sessions-*/run*"))
    print(f"{len(studies)} studies, safety x{args.safety}, rule {args.rule}%")
    print("| estimator | figure | A/A beyond rule + bound | slowed beyond | median bound |")
    print("|---|---|---|---|---|")
    for name, estimator in ESTIMATORS.items():
        for figure in FIGURES:
            judged = [j for study in studies if (j := judge(study, estimator, figure, args.safety, args.rule))]
            aa = sum(j[1]["aa"] for j in judged), sum(len(j[2]["aa"]) for j in judged)
            slow = sum(j[1]["slow"] for j in judged), sum(len(j[2]["slow"]) for j in judged)
            bound = statistics.median(j[0] for j in judged)
            print(f"| {name} | {figure} | {aa[0]} of {aa[1]} | {slow[0]} of {slow[1]} | {bound:.1f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
