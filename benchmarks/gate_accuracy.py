"""How far the upgrade gate can be trusted: its false alarms (A/A: the same server as baseline and
candidate) and its recall (each injected regression must fail the gate by name). It re-measures
what docs/guide/gate.md claims ("How far the gate can be trusted"); the figures are in
benchmarks/README.md.

A running server (``--upstream``) sits behind benchmarks/fault_proxy.py. The baseline runs every
selected suite through the proxy with no fault; each candidate runs the suites that can see its
fault, through the proxy with that fault, and ``pytest-infer compare --fail-on`` gates it against
the baseline, as a user's CI would.

    python benchmarks/gate_accuracy.py --upstream URL [--model tiny] [--aa 3]
        [--faults all|NAME,...] [--timing ttft+10ms,itl+2ms,...] [--trials 5] [--slices 1,5]
        [--sequential] [--json benchmarks/results/gate_accuracy.json]

Timing is measured as a user gates timing: baseline and candidate in one session (two proxies in
front of the one server, one of them injecting the delay), --slo-interleave taking turns slice by
slice (--slices: several alternate gate by gate, to compare them side by side), and the gate
pairing the two targets of that one results file. --sequential measures the candidate in a
session of its own after the baseline's instead, as separate CI legs would.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from fault_proxy import FAULTS, Fault, FaultProxy, fault_named

from pytest_infer import SessionResults

ROOT = Path(__file__).resolve().parents[1]
PROFILE = Path(__file__).with_name("gate_accuracy_slo.yaml")
SUITES = {
    "check": ["suites/conformance", "suites/structured/test_survival.py"],
    # string keywords only: the loosened-maxLength fault acts on top-level string schemas
    "keyword": [
        "suites/structured/test_generated.py",
        "-k",
        "test_generated and response_format and not stream",
        "--structured-keywords=type,maxLength,minLength,enum",
    ],
    "slo": ["suites/slo"],
}
STRUCTURED = ["--structured-shrink-seconds=5"]
DEFAULT_TIMING = "ttft+0.5ms,ttft+0.75ms,ttft+1ms,itl+0.05ms,itl+0.1ms,itl+0.15ms,itl+0.2ms"
PAIR = {"baseline": "candidate"}  # the two targets of an interleaved session
DEFAULT_SHARES = "maxlength-loosened@10%,maxlength-loosened@30%,maxlength-loosened@100%"


def run_suites(url: str, out: Path, areas: list[str], args: argparse.Namespace) -> Path:
    """One pytest session against ``url`` per suite area of ``areas``; their results, merged into
    ``out/results-merged.json``."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--infer-endpoint={url}", "--infer-framework=vllm", f"--infer-model={args.model}",
               f"--infer-report-dir={out}", f"--structured-examples={args.examples}", *STRUCTURED]  # fmt: skip
    if "slo" in areas:
        command += [f"--slo={PROFILE}", f"--slo-repeat={args.repeat}"]
    for area in areas:  # one session per area keeps each -k to its own files
        only = ["-k", args.checks] if area == "check" and args.checks else []
        subprocess.run(
            [*command, *SUITES[area], *only], cwd=ROOT, capture_output=True, timeout=1800
        )
        shutil.copy(out / "results.json", out / f"results-{area}.json")
    merged = out / "results-merged.json"
    subprocess.run([sys.executable, "-m", "pytest_infer.cli", "merge",
                    *(str(out / f"results-{area}.json") for area in areas), "-o", str(merged)],
                   check=True, capture_output=True)  # fmt: skip
    return merged


def run_interleaved(
    base_url: str, candidate_url: str, out: Path, args: argparse.Namespace, slices: int
) -> Path:
    """The SLO suite on both proxies in one session, taking turns slice by slice (``slices`` per
    run); its results file."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--infer-endpoint=baseline={base_url}", f"--infer-endpoint=candidate={candidate_url}",
               "--infer-framework=vllm", f"--infer-model={args.model}", f"--infer-report-dir={out}",
               f"--slo={PROFILE}", f"--slo-repeat={args.repeat}", "--slo-interleave",
               f"--slo-interleave-slices={slices}", *SUITES["slo"]]  # fmt: skip
    subprocess.run(command, cwd=ROOT, capture_output=True, timeout=1800)
    return out / "results.json"


def gate(baseline: Path, candidate: Path, rules: str, pairs: dict[str, str] | None = None) -> dict:
    """``pytest-infer compare``'s verdict, its regressions and its noise, as the CLI stores them."""
    gated = candidate.with_name(candidate.stem + "-gated.json")
    pair = [f"--pair={b}={c}" for b, c in (pairs or {}).items()]
    subprocess.run([sys.executable, "-m", "pytest_infer.cli", "compare", str(baseline), str(candidate),
                    f"--fail-on={rules}", *pair, "-o", str(gated)], capture_output=True)  # fmt: skip
    result = SessionResults.read(gated).gate
    named = {kind: [f"{f['area']}:{f['subject']}" for f in result["findings"] if f["kind"] == kind]
             for kind in ("regression", "noise")}  # fmt: skip
    return {
        "verdict": result["verdict"],
        "regressions": named["regression"],
        "noise": named["noise"],
    }


EFFECT_METRICS = ("ttft_p50_ms", "output_tokens_per_s")


def by_name(figures: dict) -> dict:
    """A load point's figures (or runs) under their names, as the results file spells them."""
    return {figure.name: value for figure, value in figures.items()}


def effects(
    baseline: Path, candidate: Path, pairs: dict[str, str] | None = None
) -> dict[str, float]:
    """What a timing fault did to the figures, in % against the baseline (the pooled figures of
    each load point)."""
    ((b, c),) = (pairs or {None: None}).items()
    slo = SessionResults.read(baseline).table("slo").points()
    before = {p.key: by_name(p.metrics) for p in slo if b is None or p.target == b}
    out = {}
    for point in SessionResults.read(candidate).table("slo").points():
        if c is not None and point.target != c:
            continue
        now, was = by_name(point.metrics), before.get(point.key, {})
        for metric in EFFECT_METRICS:
            if metric in now and was.get(metric):
                out[f"{point.key} {metric}"] = round(100 * (now[metric] / was[metric] - 1), 1)
    return out


def pair_differences(pair: Path) -> dict[str, list[float]]:
    """Run i of the candidate against run i of the baseline, in %, per figure: how closely the
    turns pair up."""
    ((base_id, cand_id),) = PAIR.items()
    points = {p.target: p for p in SessionResults.read(pair).table("slo").points()}
    base, cand = points.get(base_id), points.get(cand_id)
    if base is None or cand is None:
        return {}
    base_runs, cand_runs = by_name(base.runs), by_name(cand.runs)
    return {
        m: [
            round(100 * (c / b - 1), 1)
            for b, c in zip(base_runs.get(m, []), cand_runs.get(m, []))
            if b
        ]
        for m in EFFECT_METRICS
    }


def caught(fault: Fault, regressions: list[str]) -> bool:
    return any(name in regression for name in fault.expect for regression in regressions)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the running server under test")
    parser.add_argument("--model", default="tiny", help="the model it serves (--infer-model)")
    parser.add_argument(
        "--aa", type=int, default=3, help="A/A runs: the unchanged server as candidate"
    )
    parser.add_argument(
        "--faults", default="all", help="API and structured faults (comma-separated, all)"
    )
    parser.add_argument(
        "--timing", default=DEFAULT_TIMING, help="timing faults, e.g. ttft+10ms,itl+2ms"
    )
    parser.add_argument(
        "--shares", default=DEFAULT_SHARES, help="a keyword loosened on a share of requests"
    )
    parser.add_argument(
        "--examples", type=int, default=100, help="generated schemas per request path"
    )
    parser.add_argument(
        "--checks", help="only the conformance checks this pytest -k expression selects"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=8,
        help="runs of each SLO load point (paired: >= 5 for the signed-rank test; sequential: >= 4)",
    )
    parser.add_argument(
        "--areas", default=",".join(SUITES), help=f"what the baseline covers: {', '.join(SUITES)}"
    )
    parser.add_argument(
        "--trials", type=int, default=1, help="gates per timing fault (rate: caught / trials)"
    )
    parser.add_argument(
        "--slices",
        default="5",
        help="parts of each interleaved run that take turns; 1,5 alternate gate by gate",
    )
    parser.add_argument(
        "--sequential", action="store_true", help="timing candidates in sessions of their own"
    )
    parser.add_argument("--fail-on", default="ttft_p50:5%,ttft_p99:25%,output_tps:5%")
    parser.add_argument("--out", type=Path, default=Path("gate-accuracy"))
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args(argv)


def measure(args: argparse.Namespace) -> list[dict]:
    """Every gate's row: the A/A runs first, then one per fault (per trial of a timing fault)."""
    url, slicings = args.upstream, [int(n) for n in args.slices.split(",")]
    named = [n for n in (*args.timing.split(","), *args.shares.split(",")) if n]
    chosen = FAULTS if args.faults == "all" else [n for n in args.faults.split(",") if n]
    faults = [FAULTS[n] for n in chosen] + [fault_named(n) for n in named]
    interleave = not args.sequential
    areas = [a for a in args.areas.split(",") if a in SUITES and not (interleave and a == "slo")]
    timed = interleave and "slo" in args.areas.split(",")
    unseen = {f.area for f in faults if not (f.area == "slo" and interleave)} - set(areas)
    if unseen:
        raise SystemExit(
            f"faults of {', '.join(sorted(unseen))} need that area in --areas (the baseline)"
        )

    def timing(out: Path, fault: Fault, slices: int) -> tuple[dict, dict[str, float]]:
        """A fresh pair of proxies, alike but for the fault, so neither carries state from earlier
        legs."""
        with FaultProxy(url) as base, FaultProxy(url, fault) as candidate:
            pair = run_interleaved(base.base_url, candidate.base_url, out, args, slices)
        found = {
            **gate(pair, pair, args.fail_on, PAIR),
            "slices": slices,
            "pairs": pair_differences(pair),
        }
        return found, effects(pair, pair, PAIR)

    rows = []
    with FaultProxy(url) as proxy:
        baseline = run_suites(proxy.base_url, args.out / "baseline", areas, args) if areas else None
        for i in range(args.aa):
            found: dict = {"verdict": "PASS", "regressions": [], "noise": []}
            effect: dict[str, float] = {}
            if baseline:
                candidate = run_suites(proxy.base_url, args.out / f"aa-{i + 1}", areas, args)
                found, effect = (
                    gate(baseline, candidate, args.fail_on),
                    effects(baseline, candidate),
                )
            if timed:
                slo, effect = timing(
                    args.out / f"aa-{i + 1}-slo", fault_named("none"), slicings[i % len(slicings)]
                )
                verdict = slo["verdict"] if slo["regressions"] or not baseline else found["verdict"]
                found = {**slo, "verdict": verdict, "regressions": found["regressions"] + slo["regressions"],
                         "noise": found["noise"] + slo["noise"]}  # fmt: skip
            rows.append({"fault": f"none (A/A {i + 1})", "area": "all", "expect": [], **found,
                         "effect_percent": effect})  # fmt: skip
            print(rows[-1], flush=True)
        for fault in faults:
            for trial in range(args.trials if fault.area == "slo" else 1):
                acted = fault.acted
                if fault.area == "slo" and interleave:
                    out = args.out / f"{fault.name}-{trial + 1}"
                    found, effect = timing(out, fault, slicings[trial % len(slicings)])
                else:
                    assert baseline is not None  # its area is in the baseline's (checked above)
                    proxy.fault = fault
                    candidate = run_suites(
                        proxy.base_url, args.out / fault.name, [fault.area], args
                    )
                    found, effect = (
                        gate(baseline, candidate, args.fail_on),
                        effects(baseline, candidate),
                    )
                proxy.fault = fault_named("none")
                rows.append({"fault": fault.name, "area": fault.area, "expect": list(fault.expect),
                             "acted": fault.acted - acted, "caught": caught(fault, found["regressions"]),
                             **found})  # fmt: skip
                if fault.area == "slo":
                    rows[-1]["effect_percent"] = effect
                print(rows[-1], flush=True)
    return rows


def print_tables(rows: list[dict], slicings: list[int]) -> None:
    print(
        "| candidate | changed | must name | verdict | named by the gate |\n|---|---|---|---|---|"
    )
    for row in rows:
        mark = "" if not row["expect"] else (" ✅" if row["caught"] else " ❌")
        print(
            f"| {row['fault']} | {row.get('acted', '-')} | {', '.join(row['expect']) or '-'} |"
            f" {row['verdict']}{mark} | {', '.join(row['regressions'][:6]) or '-'} |"
        )
    print(
        "\n| timing fault | slices | trials | TTFT p50 named | output tokens/s named | median effect on"
        " TTFT p50 | on output tokens/s |\n|---|---|---|---|---|---|---|"
    )
    for name, slices in dict.fromkeys(
        (r["fault"], r.get("slices")) for r in rows if r["area"] == "slo"
    ):
        trials = [r for r in rows if r["fault"] == name and r.get("slices") == slices]
        named = {
            m: sum(any(g.endswith(m) for g in r["regressions"]) for r in trials)
            for m in EFFECT_METRICS
        }
        medians = {
            m: [v for r in trials for k, v in r["effect_percent"].items() if k.endswith(m)]
            for m in EFFECT_METRICS
        }
        shown = {
            m: f"{statistics.median(v):+.1f}%" if v else "not measured" for m, v in medians.items()
        }
        print(
            f"| {name} | {slices} | {len(trials)} | {named['ttft_p50_ms']} |"
            f" {named['output_tokens_per_s']} | {shown['ttft_p50_ms']} | {shown['output_tokens_per_s']} |"
        )
    print(
        "\n| A/A, slices | gates | false alarms | median pair difference, TTFT p50 | output tokens/s"
        " |\n|---|---|---|---|---|"
    )
    for slices in slicings:
        same = [r for r in rows if not r["expect"] and r.get("slices") == slices]
        spread = {
            m: [abs(d) for r in same for d in r.get("pairs", {}).get(m, [])] for m in EFFECT_METRICS
        }
        shown = {
            m: f"{statistics.median(v):.1f}%" if v else "not measured" for m, v in spread.items()
        }
        if same:
            print(
                f"| {slices} | {len(same)} | {sum(bool(r['regressions']) for r in same)} |"
                f" {shown['ttft_p50_ms']} | {shown['output_tokens_per_s']} |"
            )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    rows = measure(args)
    minutes = (time.monotonic() - started) / 60
    timing_mode = "sequential" if args.sequential else "interleaved"
    print(f"\n{len(rows)} runs in {minutes:.0f} min; rules {args.fail_on}, SLO repeats {args.repeat}, timing"
          f" {timing_mode}\n")  # fmt: skip
    slicings = [int(n) for n in args.slices.split(",")]
    print_tables(rows, slicings)
    if args.json:
        summary = {"rules": args.fail_on, "repeat": args.repeat, "timing": timing_mode, "trials": args.trials,
                   "slices": slicings, "minutes": round(minutes, 1), "rows": rows}  # fmt: skip
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
