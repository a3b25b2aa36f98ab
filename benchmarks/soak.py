"""Soak: run the SLO load client against one server for a long time and account for every request.

On demand, not in CI::

    python benchmarks/soak.py --url http://127.0.0.1:18000 --duration 600 --concurrency 4 --out soak-report
    python benchmarks/soak.py --account soak-report/traces.jsonl --out soak-report  # again, no load

Every request the client started is in the traces (indices 0..N-1, none missing),
and each ended one way: completed (HTTP 200 ending in ``data: [DONE]``), an
error (status, transport error, error event), a stream that ended without
``[DONE]``, or cancelled (cool-down requests stopped once the measured ones
ended). The run fails (exit 1) unless sent = completed + errors + incomplete +
cancelled and no index is missing. Where the server exports Prometheus metrics
(vLLM's ``/metrics``), its own count of finished requests is compared as well;
on a server shared with other clients it can only be at least ours.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from pytest_infer import Endpoint
from pytest_infer.load import LoadSpec, Workload, run_load  # no public API runs the client alone

SERVER_COUNTERS = (r"^vllm:request_success_total\{[^}]*\}\s+([0-9.e+]+)",)


@dataclass(slots=True)
class Accounting:
    sent: int
    completed: int
    errors: int
    incomplete: int
    cancelled: int
    missing_indices: list[int]
    measured: int
    error_kinds: dict[str, int]
    server_finished_delta: float | None = None

    @property
    def balanced(self) -> bool:
        ended = self.completed + self.errors + self.incomplete + self.cancelled
        return not self.missing_indices and self.sent == ended


def account(traces: list[dict]) -> Accounting:
    """Classify every trace (as ``traces.jsonl`` holds it) exactly once; list indices that never
    made it into the traces."""
    indices = {t["index"] for t in traces}
    missing = sorted(set(range(max(indices, default=-1) + 1)) - indices)
    completed = errors = incomplete = cancelled = 0
    kinds: dict[str, int] = {}
    for t in traces:
        if t.get("cancelled"):
            cancelled += 1
        elif t.get("error") is not None or t.get("status") != 200:
            errors += 1
            kind = (t.get("error") or f"HTTP {t.get('status')}").split(":")[0][:60]
            kinds[kind] = kinds.get(kind, 0) + 1
        elif t.get("done"):
            completed += 1
        else:
            incomplete += 1
    measured = sum(t.get("phase") == "measured" for t in traces)
    return Accounting(
        len(traces),
        completed,
        errors,
        incomplete,
        cancelled,
        missing,
        measured,
        kinds,
    )


def server_finished(endpoint: Endpoint) -> float | None:
    """The server's own count of finished requests, if it exports one."""
    try:
        text = httpx.get(f"{endpoint.base_url}/metrics", headers=endpoint.headers, timeout=10).text
    except httpx.HTTPError:
        return None
    total = None
    for pattern in SERVER_COUNTERS:
        for match in re.finditer(pattern, text, re.MULTILINE):
            total = (total or 0.0) + float(match.group(1))
    return total


def verdict(acc: Accounting) -> int:
    """0 when every request is accounted for (and the server finished at least ours), else 1."""
    if not acc.balanced:
        print(
            f"LOSS: sent {acc.sent} != completed + errors + incomplete + cancelled, or indices"
            f" missing: {acc.missing_indices[:20]}",
            file=sys.stderr,
        )
        return 1
    if acc.server_finished_delta is not None and acc.server_finished_delta < acc.completed:
        print(
            f"LOSS: the server finished {acc.server_finished_delta:.0f} requests, fewer than the"
            f" {acc.completed} completed here",
            file=sys.stderr,
        )
        return 1
    return 0


def soak(args: argparse.Namespace) -> tuple[list[dict], dict]:
    """The load run: every trace, and what the summary says of the run besides its accounting."""
    api_key = args.api_key or os.environ.get("PYTEST_INFER_API_KEY") or None
    endpoint = Endpoint(
        args.url.rstrip("/").removesuffix("/v1"), args.model or "", api_key, args.timeout
    )
    if not endpoint.model:
        endpoint = endpoint.with_model(endpoint.models(timeout=10)[0]["id"])
    spec = LoadSpec(
        mode="poisson" if args.rate else "closed",
        concurrency=args.concurrency,
        rate=args.rate,
        requests=None,
        duration_s=args.duration,
        warmup_requests=4,
    )
    workload = Workload(input_tokens=args.input_tokens, output_tokens=args.output_tokens)
    before = server_finished(endpoint)
    started = time.monotonic()
    run = run_load(endpoint, spec, workload)
    wall = time.monotonic() - started
    time.sleep(1.0)  # let the server count its last requests
    after = server_finished(endpoint)
    run_facts = {
        "url": endpoint.base_url,
        "model": endpoint.model,
        "load": spec.label,
        "duration_s": args.duration,
        "wall_s": round(wall, 1),
        "window_s": round(run.window_s, 1),
        "server_finished_delta": None if before is None or after is None else after - before,
    }
    return [t.to_dict() for t in run.traces], run_facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="the server under load")
    parser.add_argument(
        "--account",
        type=Path,
        metavar="TRACES",
        help="account for the traces.jsonl an earlier run wrote instead; sends nothing",
    )
    parser.add_argument("--model", help="default: the first id of /v1/models")
    parser.add_argument("--api-key", default=None, help="better: $PYTEST_INFER_API_KEY")
    parser.add_argument(
        "--duration",
        type=float,
        default=600.0,
        help="seconds of measured load (default 600)",
    )
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="open loop: requests/s (Poisson) instead of closed loop",
    )
    parser.add_argument("--input-tokens", type=int, default=64)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=Path("soak-report"))
    args = parser.parse_args(argv)
    if args.account:
        traces = [json.loads(line) for line in args.account.read_text().splitlines() if line]
        facts: dict = {"traces": str(args.account)}
    elif args.url:
        traces, facts = soak(args)
    else:
        parser.error("--url (a server to load) or --account (a traces.jsonl) is required")
    acc = account(traces)
    acc.server_finished_delta = facts.pop("server_finished_delta", None)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.account:
        with (args.out / "traces.jsonl").open("w") as fh:
            fh.writelines(json.dumps(t) + "\n" for t in traces)
    summary = {**facts, **asdict(acc), "balanced": acc.balanced}
    if facts.get("wall_s"):
        summary["completed_per_s"] = round(acc.completed / facts["wall_s"], 2)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return verdict(acc)


if __name__ == "__main__":
    raise SystemExit(main())
