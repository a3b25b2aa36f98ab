"""Across sessions with a calibration, the low percentiles of the per-token figures resolve a per-token slowdown that
contention-like drift hides from the typical figures: light contention stalls some tokens and leaves the fastest at
the machine's speed, a slower decode step moves every token. (On a real machine the fastest tokens drift too, under
heavy contention or a change of the machine's speed: docs/timing-across-sessions.md.) The sessions here are built
from synthetic streams through the summary, so the test also fails if the summary stops storing the low
percentiles."""

from __future__ import annotations

import random
import statistics

from pytest_infer.gating.compare import compare
from pytest_infer.load.trace import RequestTrace
from pytest_infer.results.model import SessionResults, TargetRecord
from pytest_infer.slo.drift import calibrate
from pytest_infer.slo.metrics import summarize
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings

MS = 1_000_000
TYPICAL = (
    "output_tps:5%,ttft_p50:10%,tpot_p50:10%"  # the rules before the low percentiles were stored
)
LOW = f"{TYPICAL},itl_p5:5%"


def stream(
    index: int, sent_ms: float, rng: random.Random, step_ms: float, contention: float
) -> RequestTrace:
    """One request of 16 tokens: a decode step of ``step_ms`` (+-3%), a share ``contention`` of the gaps stalled by
    0.5-3 ms (another process on the core)."""
    first = sent_ms + 8 * (1 + rng.uniform(-0.03, 0.03))
    events = [first]
    for _ in range(15):
        stall = rng.uniform(0.5, 3.0) if rng.random() < contention else 0.0
        events.append(events[-1] + step_ms * (1 + rng.uniform(-0.03, 0.03)) + stall)
    return RequestTrace(
        index=index,
        phase="measured",
        sent_ns=round(sent_ms * MS),
        first_byte_ns=round(first * MS),
        event_ns=[round(t * MS) for t in events],
        event_tokens=[1] * 16,
        end_ns=round((events[-1] + 0.1) * MS),
        done=True,
        status=200,
        usage_completion_tokens=16,
    )


def session(
    name: str, seed: int, *, contention: float, step_ms: float = 1.0, runs: int = 4
) -> SessionResults:
    """One session of one load point: ``runs`` runs of 40 sequential requests, each summarised as the suite does."""
    rng = random.Random(seed)
    figures = []
    for _ in range(runs):
        traces, clock = [], 0.0
        for i in range(40):
            traces.append(stream(i, clock, rng, step_ms, contention))
            clock = traces[-1].end_ns / MS + 0.2
        summary = summarize(traces, 0, round(clock * MS))
        figures.append({k: v for k, v in summary.figures().items() if isinstance(v, (int, float))})
    results = SessionResults(plugin_version="0.1.0", environment={})
    results.targets["vllm"] = TargetRecord(
        id="vllm", framework="vllm", model="tiny", version="0.32.0", variant={"profile": "cpu"}
    )
    results.table("slo").add(
        {
            "target": "vllm",
            "profile": "cpu",
            "load_point": "c1",
            "concurrency": 1,
            "verdict": "pass",
            "session": name,
            "runs": figures,
            "metrics": {k: statistics.median(f[k] for f in figures) for k in figures[0]},
        }
    )
    return results


def test_a_per_token_slowdown_fails_on_the_low_percentile_where_contention_drift_passes():
    drift = calibrate(
        [
            (f"cal{i}", session(f"cal{i}", i, contention=c))
            for i, c in enumerate((0.1, 0.4, 0.2, 0.5, 0.3))
        ]
    )
    baseline = session("base", 10, contention=0.2)
    noisy_aa = session(
        "aa", 11, contention=0.5
    )  # the same server on a busier machine: half the tokens stalled
    slower = session("slow", 12, contention=0.3, step_ms=1.2)  # every decode step 20% longer

    stored = baseline.table("slo").points()[0].metrics
    assert {"itl_p5_ms", "itl_p10_ms", "tpot_p5_ms", "tpot_p10_ms", "itl_token_p5_ms"} <= {
        str(f) for f in stored
    }
    # the contention moves the typical per-token figures by far more than 20%; the fastest tokens hardly
    assert (
        drift.figures["cpu/c1"][next(f for f in stored if str(f) == "tpot_p50_ms")].bound_pct > 40
    )
    assert drift.figures["cpu/c1"][next(f for f in stored if str(f) == "itl_p5_ms")].bound_pct < 5

    low = gate_settings(parse_rules(LOW), drift)
    aa = compare(baseline, noisy_aa, low)
    assert not aa.failed, aa.verdict
    slow = compare(baseline, slower, low)
    assert slow.failed and [f.subject for f in slow.regressions] == ["cpu/c1: itl_p5_ms"], (
        slow.verdict
    )
    # the typical figures alone cannot tell the slower candidate from the drift: it passes, within rule + drift
    typical = compare(baseline, slower, gate_settings(parse_rules(TYPICAL), drift))
    assert not typical.failed, typical.verdict
